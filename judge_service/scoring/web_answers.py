"""A done batch's answer, serialised straight from its stored outcomes.

Why not build a ``wire.RewardResponse``: that validates a ``SampleResult`` (and a
``JudgeResult`` per verdict) for every sample, several milliseconds per GRPO step
while the trainer waits. :class:`DoneAnswer` holds the domain outcomes and lets
pydantic-core pick the wire fields out of them as it writes the JSON. The JSON is
the same as a ``RewardResponse`` of the same batch (the field order of
``Outcome``, ``Verdict`` and ``Finding`` follows the wire models), and the tests
hold both paths to it.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel
from pydantic.main import IncEx

from judge_service import wire
from judge_service.domain import NO_USAGE, Outcome

#: A pydantic ``exclude`` by field name: mypy cannot check a dict literal against ``IncEx``
#: itself (a union of two mappings and two sets), but can against this one of its members.
_Exclude = dict[str, IncEx | bool]

#: What an ``Outcome`` has beyond a ``wire.SampleResult``, a ``Verdict`` beyond a
#: ``wire.JudgeResult``, and a ``Finding`` beyond a ``wire.FindingOut``.
_NOT_ON_THE_WIRE: _Exclude = {
    "usage": True,
    "judges": {"__all__": {"weight", "timed_out", "not_scorable", "components", "usage"}},
    "findings": {"__all__": {"covers"}},  # how the score was summed, not what was found
}
_FULL: _Exclude = {"results": {"__all__": _NOT_ON_THE_WIRE}}
_COMPACT: _Exclude = {
    "results": {
        "__all__": {
            "usage": True,
            "findings": {"__all__": {"covers"}},
            **dict.fromkeys(wire.COMPACT_RESULT_OMITS, True),
        }
    }
}


class DoneAnswer(BaseModel):
    """``wire.RewardResponse`` for a done batch, with the outcomes as they were stored."""

    batch_id: str
    status: Literal["done"] = "done"
    rubric: str | None = None
    run_id: str | None = None
    step: int | None = None
    progress: wire.Progress
    results: list[Outcome]
    groups: dict[str, wire.GroupStats]
    usage: wire.Usage
    warnings: list[str] = []  # pydantic copies a mutable default per instance

    def to_json(self, *, compact: bool = False) -> str:
        """The answer as JSON; ``compact`` leaves each result's judges and components out."""
        return self.model_dump_json(exclude=_COMPACT if compact else _FULL)


def _pstdev(values: list[float]) -> float:
    """Population standard deviation in floats (``statistics.pstdev`` works in exact
    fractions: ~1 ms for a GRPO step's 64 groups)."""
    if len(values) < 2:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))


def _groups(outcomes: list[Outcome], group_ids: list[str | None]) -> dict[str, wire.GroupStats]:
    rewards: dict[str, list[float]] = {}
    for outcome, group in zip(outcomes, group_ids, strict=False):
        if group is None:
            continue
        bucket = rewards.get(group)
        if bucket is None:
            bucket = rewards[group] = []
        if outcome.valid and outcome.reward is not None:
            bucket.append(outcome.reward)
    stats = {}
    for group, values in rewards.items():
        std = _pstdev(values)
        stats[group] = wire.GroupStats(reward_std=round(std, 6), has_advantage=std > 1e-9)
    return stats


def _usage(outcomes: list[Outcome]) -> wire.Usage:
    """The batch's usage in one pass (adding 256 pydantic objects costs more than it should);
    outcomes that cost nothing (``NO_USAGE``) are skipped."""
    calls = hits = prompt_tokens = completion_tokens = 0
    cost = 0.0
    for outcome in outcomes:
        usage = outcome.usage
        if usage is NO_USAGE:
            continue
        calls += usage.judge_calls
        hits += usage.cache_hits
        prompt_tokens += usage.prompt_tokens
        completion_tokens += usage.completion_tokens
        cost += usage.cost_usd
    return wire.Usage(
        judge_calls=calls,
        cache_hits=hits,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost,
    )


def done_response(
    *,
    batch_id: str,
    rubric: str | None,
    run_id: str | None,
    step: int | None,
    outcomes: list[Outcome],
    group_ids: list[str | None],
    warnings: list[str] | None = None,
) -> DoneAnswer:
    """A done batch's answer from its stored outcomes, in sample order (every answer
    is a read-back of the batch, so a POST and a later GET give the same bytes)."""
    return DoneAnswer(
        batch_id=batch_id,
        rubric=rubric,
        run_id=run_id,
        step=step,
        progress=wire.Progress(scored=len(outcomes), total=len(outcomes)),
        results=outcomes,
        groups=_groups(outcomes, group_ids),
        usage=_usage(outcomes),
        warnings=warnings or [],
    )
