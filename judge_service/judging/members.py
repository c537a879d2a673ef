"""Running one judge on one sample, with the batch deadline, turning failures into data."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from judge_service.contracts import GroupScorer, Judge, JudgeContext
from judge_service.domain import JudgeScore, Sample, SampleNotScorable, Verdict


@dataclass(frozen=True)
class PanelMember:
    """A judge instance on a panel, under the name it reports and with its weight."""

    name: str
    judge: Judge
    weight: float = 1.0


T = TypeVar("T")


class CallDeadline:
    """The batch deadline for judge calls, on one timer for the whole batch.

    Why not ``asyncio.timeout`` around each call: every call of a batch shares the
    same deadline, and a timer per call costs a ``Timeout`` object, a heap push and a
    cancelled handle left in the loop's heap, hundreds of times per GRPO step. Here
    one timer, armed by the first call, cancels the calls still running when the
    deadline passes, and each of them raises ``TimeoutError`` instead of
    ``CancelledError``, exactly as under ``asyncio.timeout``.
    """

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline  # a time.monotonic() value
        self.running: set[asyncio.Task[Any]] = set()
        self.expired: set[asyncio.Task[Any]] = set()
        self.timer: asyncio.TimerHandle | None = None

    async def run(self, call: Awaitable[T]) -> T:
        """Await ``call``; ``TimeoutError`` if the deadline passes first."""
        if self.deadline is None:
            return await call
        left_s = self.deadline - time.monotonic()
        if left_s <= 0:
            if asyncio.iscoroutine(call):
                call.close()  # never started: no "was never awaited" warning
            raise TimeoutError
        task = asyncio.current_task()
        if task is None:  # not inside a task: nothing to cancel
            return await call
        if self.timer is None:  # call_later: the loop's own clock (uvloop's is not ours)
            self.timer = asyncio.get_running_loop().call_later(left_s, self._expire)
        self.running.add(task)
        try:
            return await call
        except asyncio.CancelledError:
            if task in self.expired and task.uncancel() == 0:
                raise TimeoutError from None  # our cancellation, and nobody else's
            raise
        finally:
            self.running.discard(task)
            self.expired.discard(task)

    def _expire(self) -> None:
        for task in self.running - self.expired:
            self.expired.add(task)
            task.cancel()

    def close(self) -> None:
        """Disarm the timer once the batch is over."""
        if self.timer is not None:
            self.timer.cancel()


#: ``Verdict``'s validator, called with a dict: no keyword packing in ``BaseModel.__init__``
#: on this per-answer path.
_VERDICT = Verdict.__pydantic_validator__


def verdict_from(member: PanelMember, score: JudgeScore) -> Verdict:
    return _VERDICT.validate_python(
        {
            "judge": member.name,
            "weight": member.weight,
            "score": score.score,
            "rationale": score.rationale,
            "components": score.components,
            "usage": score.usage,
        }
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

    @staticmethod
    def judges_groups(member: PanelMember) -> bool:
        """True for a relative judge: one that declares ``GroupScorer`` and is ``relative``."""
        judge = member.judge
        return isinstance(judge, GroupScorer) and judge.relative

    def covers(self, member: PanelMember, sample: Sample) -> bool:
        return sample.group_id in self.groups and self.judges_groups(member)

    async def score(self, member: PanelMember, sample: Sample, context: JudgeContext) -> JudgeScore:
        group_id = sample.group_id or ""
        key = (member.name, group_id)
        if key not in self.tasks:
            group, judge = self.groups[group_id], member.judge
            assert isinstance(judge, GroupScorer)  # covers() chose this path
            self.tasks[key] = asyncio.ensure_future(judge.score_group(group, context))
        scores = await asyncio.shield(self.tasks[key])
        index = next(i for i, s in enumerate(self.groups[group_id]) if s.id == sample.id)
        return scores[index]


async def run_judge(
    member: PanelMember,
    sample: Sample,
    context: JudgeContext,
    groups: GroupScores | None = None,
    deadline: CallDeadline | None = None,
) -> Verdict:
    """One judge's verdict. Never raises (except cancellation): a failure is recorded.

    ``deadline`` is the batch's shared timer; without one, the call gets its own
    timer at ``context.deadline``.
    """
    if groups is not None and groups.covers(member, sample):
        call = groups.score(member, sample, context)
    else:
        call = member.judge.score(sample, context)
    own_timer = deadline is None
    timer = CallDeadline(context.deadline) if deadline is None else deadline
    try:
        score = await timer.run(call)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the judge boundary: any failure becomes the verdict's error
        verdict = failed_verdict(member, exc)
        spent = getattr(exc, "usage", None)  # a failed model call still cost tokens
        return verdict.model_copy(update={"usage": spent}) if spent is not None else verdict
    finally:
        if own_timer:
            timer.close()
    return verdict_from(member, score)


async def run_panel(
    members: list[PanelMember],
    sample: Sample,
    context: JudgeContext,
    groups: GroupScores | None = None,
    deadline: CallDeadline | None = None,
) -> list[Verdict]:
    """All judges of the panel on one sample, concurrently, in panel order."""
    calls = (run_judge(m, sample, context, groups, deadline) for m in members)
    return list(await asyncio.gather(*calls))
