"""verifiers adapter: a group reward function making one service call per group.

Use it in a ``vf.Rubric``: ``vf.Rubric(funcs=[group_reward_function(url, api_key=k)])``
(verifiers 0.3; its plural arguments mark it as a group function). verifiers expects
numbers, so a masked rollout scores ``masked_value`` (0.0 by default); its state gets
``judge_service_valid: False``. A call that fails (after the client's retries) masks the
whole group the same way, with ``judge_service_error`` saying why: left to verifiers, the
error would become a bare 0.0 for every rollout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from trainer_bridge.client import AsyncRewardClient, RewardError

log = logging.getLogger(__name__)


def group_reward_function(
    base_url: str,
    *,
    api_key: str | None = None,
    rubric: str | None = None,
    judges: list[Any] | None = None,
    run_id: str | None = None,
    timeout_s: float = 600.0,
    masked_value: float = 0.0,
    **client_options: Any,
) -> Callable[..., Awaitable[list[float]]]:
    """An async function over a group's ``prompts``/``completions``/``answers``/``states``.

    One client serves every call, so the connection stays open between groups.
    """
    client = AsyncRewardClient(base_url, api_key, timeout=timeout_s, **client_options)

    async def judge_service(
        prompts: list[Any],
        completions: list[Any],
        answers: list[Any] | None = None,
        states: list[dict] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        answers = answers or [None] * len(prompts)
        samples = []
        for index, (prompt, completion, answer) in enumerate(
            zip(prompts, completions, answers, strict=True)
        ):
            sample = {
                "id": str(index),
                "group_id": "group",
                "prompt": prompt,
                "completion": completion,
            }
            if answer not in (None, ""):
                sample["reference"] = answer
            samples.append(sample)
        try:
            results = await client.score(
                samples, rubric=rubric, judges=judges, run_id=run_id, detail="compact"
            )
        except RewardError as exc:
            log.warning("judge-service gave no rewards for a group of %d: %s", len(samples), exc)
            for state in states or []:
                if isinstance(state, dict):
                    state["judge_service_valid"] = False
                    state["judge_service_error"] = str(exc)
            return [masked_value] * len(samples)
        for state, result in zip(states or [], results, strict=False):
            if isinstance(state, dict):
                state["judge_service_valid"] = result.valid
                state["judge_service_hack_score"] = result.hack_score
        return [r.reward if r.valid and r.reward is not None else masked_value for r in results]

    return judge_service
