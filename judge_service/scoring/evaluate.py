"""Scoring a batch: every sample concurrently under one deadline. Pure: no DB, no HTTP.

Each sample becomes exactly one Outcome. A sample still unscored at the deadline
is masked as ``timeout``; an empty one as ``bad_sample``; the batch never fails
as a whole.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from judge_service.audit.host import PenaltyPolicy, audit, floor_penalty
from judge_service.contracts import Detector, Evidence, JudgeContext
from judge_service.domain import Outcome, Rubric, Sample
from judge_service.judging.consensus import Panel, decide
from judge_service.judging.members import CallDeadline, GroupScores, run_judge, run_panel

log = logging.getLogger(__name__)

OnOutcome = Callable[[int, Outcome], Awaitable[None]]
DEADLINE_GRACE_S = 0.2

#: What detectors may compare one rollout against (``Evidence.run_stats``): the batch's run
#: and step, its size and completion lengths.
RunStats = dict[str, str | int | float | None]


@dataclass(frozen=True)
class Scoring:
    """The live parts that score a batch besides its samples: the panel, detectors and
    policy built from its stored :class:`~judge_service.core.batch_plan.BatchPlan`, and the
    deadline. Built by the worker (and ``judge-service score``), never stored."""

    panel: Panel
    rubric: Rubric | None = None
    detectors: Sequence[Detector] = field(default_factory=tuple)
    penalty: PenaltyPolicy = floor_penalty
    known_hacks: Sequence[str] = field(default_factory=tuple)
    run_stats: RunStats = field(default_factory=dict)
    deadline: float | None = None  # time.monotonic() value
    concurrency: int = 256
    settings: object = None

    @functools.cached_property
    def context(self) -> JudgeContext:
        """What every judge call of the batch receives (the same for all its samples)."""
        return JudgeContext(rubric=self.rubric, deadline=self.deadline, settings=self.settings)

    @functools.cached_property
    def call_deadline(self) -> CallDeadline:
        """The one timer that stops the batch's judge calls at its deadline."""
        return CallDeadline(self.deadline)


async def evaluate_sample(
    sample: Sample, scoring: Scoring, groups: GroupScores | None = None
) -> Outcome:
    """One sample through judges, consensus and audit."""
    if sample.is_blank():
        return Outcome.masked(sample.id, "bad_sample", "the completion is empty")
    members = scoring.panel.members
    if len(members) == 1:  # the usual one-judge panel: no gather, no extra task or frame
        verdict = await run_judge(
            members[0], sample, scoring.context, groups, scoring.call_deadline
        )
        verdicts = [verdict]
    else:
        verdicts = await run_panel(members, sample, scoring.context, groups, scoring.call_deadline)
    outcome = decide(sample.id, verdicts, scoring.panel)
    if not scoring.detectors:
        return outcome
    evidence = Evidence(
        verdicts=verdicts,
        rubric=scoring.rubric,
        known_hacks=scoring.known_hacks,
        raw_reward=outcome.raw_reward,
        run_stats=scoring.run_stats,
    )
    return await audit(sample, outcome, scoring.detectors, evidence, scoring.penalty)


def batch_stats(samples: Sequence[Sample]) -> dict[str, int | float]:
    """What detectors may compare one rollout against: the batch's size and lengths."""
    lengths = [len(s.transcript()) for s in samples]
    if not lengths:
        return {"batch_size": 0}
    mean = sum(lengths) / len(lengths)
    spread = (sum((n - mean) ** 2 for n in lengths) / len(lengths)) ** 0.5
    return {
        "batch_size": len(lengths),
        "completion_chars_mean": mean,
        "completion_chars_std": spread,
    }


async def evaluate_batch(
    samples: Sequence[tuple[int, Sample]],
    scoring: Scoring,
    on_outcome: OnOutcome,
) -> int:
    """Score ``(position, sample)`` pairs, calling ``on_outcome`` as each finishes.

    Returns how many outcomes were delivered (always ``len(samples)``).
    """
    # No gate when the whole batch fits under the concurrency limit (a GRPO step does).
    gate = asyncio.Semaphore(scoring.concurrency) if len(samples) > scoring.concurrency else None
    by_group: dict[str, list[Sample]] = {}
    if any(GroupScores.judges_groups(member) for member in scoring.panel.members):
        for _, sample in samples:  # only relative judges need the groups up front
            if sample.group_id is not None and not sample.is_blank():
                by_group.setdefault(sample.group_id, []).append(sample)
    groups = GroupScores(by_group)
    delivered: set[int] = set()
    unfinished = len(samples)
    all_finished = asyncio.get_running_loop().create_future()

    async def score_and_deliver(index: int, sample: Sample) -> None:
        # Each task delivers its own outcome and counts itself out: one future for the
        # whole batch, not a done-callback per task (asyncio.wait's), keeps the end of a
        # GRPO step's burst of 256 completions short.
        nonlocal unfinished
        try:
            try:
                if gate is None:
                    outcome = await evaluate_sample(sample, scoring, groups)
                else:
                    async with gate:
                        outcome = await evaluate_sample(sample, scoring, groups)
            except Exception as exc:  # the sample boundary: a bug masks one sample, not the batch
                log.exception("sample %s failed", sample.id)
                reason = f"{type(exc).__name__}: {exc}"
                outcome = Outcome.masked(sample.id, "internal_error", reason)
            delivered.add(index)
            await on_outcome(index, outcome)
        finally:
            unfinished -= 1
            if unfinished == 0 and not all_finished.done():
                all_finished.set_result(None)

    tasks = [asyncio.ensure_future(score_and_deliver(i, s)) for i, s in samples]
    # Judges stop at the deadline themselves; the grace lets each sample's consensus use
    # the judges that did answer (down to the quorum) before unfinished work is cancelled.
    timeout = None
    if scoring.deadline is not None:
        timeout = max(0.0, scoring.deadline + DEADLINE_GRACE_S - time.monotonic())
    if tasks:
        # ``finally``: also when the batch itself is cancelled (the process stops), so that
        # no sample's task outlives it on the thread's loop
        try:
            await asyncio.wait([all_finished], timeout=timeout)
        finally:
            pending = [task for task in tasks if not task.done()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
    scoring.call_deadline.close()
    if len(delivered) == len(samples):
        return len(delivered)  # the usual case: no need to read every sample again
    for index, sample in samples:
        if index not in delivered:
            delivered.add(index)
            await on_outcome(
                index,
                Outcome.masked(sample.id, "timeout", "the batch deadline passed before scoring"),
            )
    return len(delivered)
