"""Running one judge on one sample, with the batch deadline, turning failures into data."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from judge_service.contracts import Judge, JudgeContext
from judge_service.domain import JudgeScore, Sample, SampleNotScorable, Verdict


@dataclass(frozen=True)
class PanelMember:
    """A judge instance on a panel, under the name it reports and with its weight."""

    name: str
    judge: Judge
    weight: float = 1.0


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def verdict_from(member: PanelMember, score: JudgeScore) -> Verdict:
    return Verdict(
        judge=member.name,
        weight=member.weight,
        score=score.score,
        rationale=score.rationale,
        components=score.components,
        usage=score.usage,
    )


def failed_verdict(member: PanelMember, error: BaseException | str) -> Verdict:
    """A verdict recording why the judge gave no score; ``timed_out`` marks deadline misses."""
    if isinstance(error, TimeoutError):
        return Verdict(judge=member.name, weight=member.weight, error="timeout", timed_out=True)
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return Verdict(
        judge=member.name,
        weight=member.weight,
        error=message[:2000],
        not_scorable=isinstance(error, SampleNotScorable),
    )


class GroupScores:
    """Relative judging of GRPO groups: one ``score_group`` call per (judge, group), shared.

    The first sample of a group to need a relative judge starts the group call; the
    others await the same task and take their own score from it.
    """

    def __init__(self, groups: dict[str, list[Sample]]) -> None:
        self.groups = {gid: members for gid, members in groups.items() if len(members) >= 2}
        self.tasks: dict[tuple[str, str], asyncio.Task[list[JudgeScore]]] = {}

    def covers(self, member: PanelMember, sample: Sample) -> bool:
        relative = getattr(member.judge, "relative", False) and hasattr(member.judge, "score_group")
        return bool(relative) and sample.group_id in self.groups

    async def score(self, member: PanelMember, sample: Sample, context: JudgeContext) -> JudgeScore:
        group_id = sample.group_id or ""
        key = (member.name, group_id)
        if key not in self.tasks:
            group = self.groups[group_id]
            judge: Any = member.judge
            self.tasks[key] = asyncio.ensure_future(judge.score_group(group, context))
        scores = await asyncio.shield(self.tasks[key])
        index = next(i for i, s in enumerate(self.groups[group_id]) if s.id == sample.id)
        return scores[index]


async def run_judge(
    member: PanelMember,
    sample: Sample,
    context: JudgeContext,
    groups: GroupScores | None = None,
) -> Verdict:
    """One judge's verdict. Never raises (except cancellation): a failure is recorded."""
    if groups is not None and groups.covers(member, sample):
        call = groups.score(member, sample, context)
    else:
        call = member.judge.score(sample, context)
    try:
        # asyncio.timeout rather than wait_for: wait_for wraps the call in one more task,
        # a measurable cost with hundreds of samples per batch.
        async with asyncio.timeout(_remaining(context.deadline)):
            score = await call
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the judge boundary: any failure becomes the verdict's error
        verdict = failed_verdict(member, exc)
        spent = getattr(exc, "usage", None)  # a failed model call still cost tokens
        return verdict.model_copy(update={"usage": spent}) if spent is not None else verdict
    return verdict_from(member, score)


async def run_panel(
    members: list[PanelMember],
    sample: Sample,
    context: JudgeContext,
    groups: GroupScores | None = None,
) -> list[Verdict]:
    """All judges of the panel on one sample, concurrently, in panel order."""
    if len(members) == 1:  # the common single-judge panel needs no gather (and no extra task)
        return [await run_judge(members[0], sample, context, groups)]
    return list(await asyncio.gather(*(run_judge(m, sample, context, groups) for m in members)))
