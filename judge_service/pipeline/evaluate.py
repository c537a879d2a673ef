"""Scoring a batch: every sample concurrently under one deadline. Pure: no DB, no HTTP.

Each sample becomes exactly one Outcome. A sample still unscored at the deadline
is masked as ``timeout``; an empty one as ``bad_sample``; the batch never fails
as a whole.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from judge_service.contracts import Detector, Evidence, JudgeContext
from judge_service.domain import Outcome, Rubric, Sample
from judge_service.pipeline.auditing import audit
from judge_service.pipeline.consensus import Panel, decide
from judge_service.pipeline.judging import GroupScores, run_panel

log = logging.getLogger(__name__)

OnOutcome = Callable[[int, Outcome], Awaitable[None]]
DEADLINE_GRACE_S = 0.2


@dataclass(frozen=True)
class Plan:
    """Everything needed to score a batch besides the samples."""

    panel: Panel
    rubric: Rubric | None = None
    detectors: Sequence[Detector] = field(default_factory=tuple)
    deadline: float | None = None  # time.monotonic() value
    concurrency: int = 256
    settings: object = None


async def evaluate_sample(sample: Sample, plan: Plan, groups: GroupScores | None = None) -> Outcome:
    """One sample through judges, consensus and audit."""
    if sample.is_blank():
        return Outcome.masked(sample.id, "bad_sample", "the completion is empty")
    context = JudgeContext(rubric=plan.rubric, deadline=plan.deadline, settings=plan.settings)
    verdicts = await run_panel(plan.panel.members, sample, context, groups)
    outcome = decide(sample.id, verdicts, plan.panel)
    if not plan.detectors:
        return outcome
    return audit(sample, outcome, plan.detectors, Evidence(verdicts=verdicts, rubric=plan.rubric))


async def _guarded(
    sample: Sample, plan: Plan, gate: asyncio.Semaphore, groups: GroupScores
) -> Outcome:
    async with gate:
        try:
            return await evaluate_sample(sample, plan, groups)
        except Exception as exc:  # the sample boundary: a bug masks one sample, not the batch
            log.exception("sample %s failed", sample.id)
            return Outcome.masked(sample.id, "internal_error", f"{type(exc).__name__}: {exc}")


async def evaluate_batch(
    samples: Sequence[tuple[int, Sample]], plan: Plan, on_outcome: OnOutcome
) -> int:
    """Score ``(position, sample)`` pairs, calling ``on_outcome`` as each finishes.

    Returns how many outcomes were delivered (always ``len(samples)``).
    """
    gate = asyncio.Semaphore(plan.concurrency)
    by_group: dict[str, list[Sample]] = {}
    for _, sample in samples:
        if sample.group_id is not None and not sample.is_blank():
            by_group.setdefault(sample.group_id, []).append(sample)
    groups = GroupScores(by_group)
    tasks = {
        asyncio.ensure_future(_guarded(sample, plan, gate, groups)): (index, sample)
        for index, sample in samples
    }
    delivered = 0
    pending = set(tasks)
    # Judges stop at the deadline themselves; the grace lets each sample's consensus use
    # the judges that did answer (down to the quorum) before unfinished work is cancelled.
    end = None if plan.deadline is None else plan.deadline + DEADLINE_GRACE_S
    while pending:
        left = None if end is None else max(0.0, end - time.monotonic())
        done, pending = await asyncio.wait(
            pending, timeout=left, return_when=asyncio.FIRST_COMPLETED
        )
        for task in done:
            index, _ = tasks[task]
            await on_outcome(index, task.result())
            delivered += 1
        if not done and pending:  # the deadline passed
            break
    for task in pending:
        task.cancel()
    for task in pending:
        index, sample = tasks[task]
        await on_outcome(
            index,
            Outcome.masked(sample.id, "timeout", "the batch deadline passed before scoring"),
        )
        delivered += 1
    return delivered
