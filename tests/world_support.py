"""Traces for the world's tests, as production logs them: an assistant message that calls one
tool, then the tool's answer."""

from __future__ import annotations

import json
import random
from typing import Any

from judge_service.world.model import PATHS, Call
from judge_service.world.world import World

#: Argument values of every JSON type and odd text.
ODD_VALUES: list[Any] = [None, True, 0, 2.5, "", [], {"a": 1}, "é\u202e", "x" * 300]


def exchange(call_id: str, name: str, args: dict[str, Any], answer: str) -> list[dict[str, Any]]:
    """The assistant's call of ``name`` with ``args`` and the tool message answering it."""
    function = {"name": name, "arguments": json.dumps(args)}
    call = {"id": call_id, "type": "function", "function": function}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": answer},
    ]


def fuzz_calls(world: World, names: list[str], keys: list[str], values: list[Any], n: int) -> None:
    """``n`` calls of the tools ``names`` with arguments drawn from ``keys`` and ``values``
    (and :data:`ODD_VALUES`), the state carried: each gets an answer on a known path and
    leaves a JSON state; none raises."""
    rng = random.Random(n)
    state = world.task_state([])
    pool = values + ODD_VALUES
    for _ in range(n):
        args = {k: rng.choice(pool) for k in rng.sample(keys, rng.randint(0, len(keys)))}
        answer = world.answer(state, Call(name=rng.choice([*names, "nope"]), arguments=args))
        assert answer.path in PATHS
        json.dumps(answer.state_after)
        state = answer.state_after
