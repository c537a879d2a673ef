"""Running one judge on one sample, with the batch deadline, turning failures into data."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

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


async def run_judge(member: PanelMember, sample: Sample, context: JudgeContext) -> Verdict:
    """One judge's verdict. Never raises (except cancellation): a failure is recorded."""
    try:
        score = await asyncio.wait_for(
            member.judge.score(sample, context), timeout=_remaining(context.deadline)
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the judge boundary: any failure becomes the verdict's error
        return failed_verdict(member, exc)
    return verdict_from(member, score)


async def run_panel(
    members: list[PanelMember], sample: Sample, context: JudgeContext
) -> list[Verdict]:
    """All judges of the panel on one sample, concurrently, in panel order."""
    return list(await asyncio.gather(*(run_judge(m, sample, context) for m in members)))
