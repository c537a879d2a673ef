"""(e)'s model calls: one JSON completion per tool call that nothing learned answers
(:mod:`judge_service.episodes.client_models`); the step route plays the step with the answers
(:mod:`judge_service.world.simulate`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.core.errors import Unavailable
from judge_service.core.settings import Settings
from judge_service.episodes.client_models import ask_json
from judge_service.episodes.script import Script
from judge_service.judging.client import ModelCallError
from judge_service.world.model import Call
from judge_service.world.simulate import ANSWER_SCHEMA, answer_of, call_key, tool_messages
from judge_service.world.world import World


class SimulatorFailed(Unavailable):
    """The simulator model gave no usable answer: the step was not played; send it again."""

    code = "simulator_failed"


async def simulate_calls(
    settings: Settings,
    world: World,
    script: Script,
    asked: Sequence[tuple[Call, Mapping[str, Any]]],
    seed: int,
) -> dict[str, str]:
    """Each asked call's answer by the simulator model, keyed as :class:`GivenAnswers` reads."""
    schemas = script.schemas()

    async def one(call: Call, state: Mapping[str, Any]) -> tuple[str, str]:
        messages = tool_messages(world, schemas.get(call.name, {}), state, call)
        try:
            payload = await ask_json(
                settings,
                script.simulator,
                "simulator",
                messages,
                ANSWER_SCHEMA,
                seed=seed,
                max_tokens=800,
                cache_key_parts={"world_tool": call.name, "seed": seed},
                schema_name="tool_answer",
            )
        except (ModelCallError, ValueError) as exc:  # ValueError: the spec no longer runs
            raise SimulatorFailed(f"the simulator model failed on {call.name}: {exc}") from exc
        text = answer_of(payload)
        if text is None:
            raise SimulatorFailed(f"the simulator model gave no answer for {call.name}")
        return call_key(call), text

    return dict(await asyncio.gather(*(one(call, state) for call, state in asked)))
