"""TRL adapter: an async ``reward_funcs`` entry for ``GRPOTrainer``.

A masked sample comes back as ``None`` (TRL turns it into NaN and leaves it out
of the advantage), never as 0. Identical prompts form one GRPO group. TRL passes a
dataset's extra columns to reward functions as keyword arguments: ``reference`` (or
``answer``, ``solution`` ...) becomes the sample's reference and ``task_id`` its
``metadata.task_id``, so a ``judge-service forge export`` trains with no glue code and the
run's difficulty tiers (``GET /v1/runs/{run_id}/tasks``) are per task.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from trainer_bridge.client import AsyncRewardClient

REFERENCE_COLUMNS = ("reference", "answer", "solution", "ground_truth", "label")


def _group_id(prompt: Any) -> str:
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _column(kwargs: dict[str, Any], names: Sequence[str], size: int) -> list[Any]:
    for name in names:
        values = kwargs.get(name)
        if isinstance(values, list) and len(values) == size:
            return values
    return [None] * size


def _step(trainer_state: Any) -> int | None:
    step = getattr(trainer_state, "global_step", None)
    return int(step) if isinstance(step, int) else None


def build_samples(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[dict]:
    """Samples in the service's format from TRL's arguments and dataset columns."""
    size = len(prompts)
    references = _column(kwargs, REFERENCE_COLUMNS, size)
    contexts = _column(kwargs, ("context",), size)
    task_ids = _column(kwargs, ("task_id",), size)
    samples = []
    group_ids: dict[str, str] = {}  # a GRPO step repeats each prompt: hash it once
    for index, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        group_id = group_ids.get(prompt) if isinstance(prompt, str) else None
        if group_id is None:
            group_id = _group_id(prompt)
            if isinstance(prompt, str):
                group_ids[prompt] = group_id
        sample: dict[str, Any] = {
            "id": str(index),
            "group_id": group_id,
            "prompt": prompt,
            "completion": completion,
        }
        if references[index] is not None:
            sample["reference"] = references[index]
        context = contexts[index]
        if context is not None:
            sample["context"] = context if isinstance(context, list) else [str(context)]
        if task_ids[index] is not None:
            sample["metadata"] = {"task_id": str(task_ids[index])}
        samples.append(sample)
    return samples


def reward_function(
    base_url: str,
    *,
    api_key: str | None = None,
    rubric: str | None = None,
    judges: list[Any] | None = None,
    run_id: str | None = None,
    timeout_s: float = 600.0,
    **client_options: Any,
) -> Callable[..., Awaitable[list[float | None]]]:
    """An async function with TRL's reward signature, scoring through judge-service.

    One client serves every call, so the connection stays open between steps.
    """
    client = AsyncRewardClient(base_url, api_key, timeout=timeout_s, **client_options)

    async def judge_service_reward(
        prompts: list[Any],
        completions: list[Any],
        completion_ids: list[Any] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        results = await client.rewards(
            build_samples(prompts, completions, **kwargs),
            rubric=rubric,
            judges=judges,
            run_id=run_id,
            step=_step(kwargs.get("trainer_state")),
        )
        log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
        if callable(log_extra):
            log_extra("hack_score", [r.hack_score for r in results])
        if callable(log_metric) and results:
            log_metric("judge_service/valid_fraction", sum(r.valid for r in results) / len(results))
            log_metric(
                "judge_service/hack_rate", sum(r.hack_score >= 0.5 for r in results) / len(results)
            )
        return [r.reward if r.valid else None for r in results]

    judge_service_reward.__name__ = "judge_service"
    return judge_service_reward
