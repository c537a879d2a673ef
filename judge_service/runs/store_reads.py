"""What the run page reads besides the report: the runs, a run's flagged rollouts, its labels.

The report's own figures come from :mod:`judge_service.runs.store`; these reads add what a
person looking at a run wants next to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, func, select, true
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import BatchRow, FindingRow, ResultRow, SampleRow
from judge_service.review.tables import ReviewItemRow
from judge_service.rubrics.tables import HumanLabelRow


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    latest_step: int | None
    batches: int
    last_at: datetime


@dataclass
class FlaggedRollout:
    """A flagged rollout of the run, and the review item about it when there is one."""

    step: int | None
    batch_id: str
    sample_id: str
    raw_reward: float | None
    reward: float | None
    hack_score: float
    at: datetime
    kinds: list[str] = field(default_factory=list)
    item_id: int | None = None


def _of_project(project: str | None) -> ColumnElement[bool]:
    """Batches of ``project`` (None: of every project)."""
    return true() if project is None else BatchRow.project == project


def list_runs(
    *, session: Session, limit: int = 200, project: str | None = None
) -> list[RunSummary]:
    """Runs with at least one finished batch (of ``project``), most recently active first."""
    rows = session.execute(
        select(
            BatchRow.run_id,
            func.max(BatchRow.step),
            func.count(BatchRow.id),
            func.max(BatchRow.created_at),
        )
        .where(BatchRow.run_id.is_not(None), BatchRow.status == "done", _of_project(project))
        .group_by(BatchRow.run_id)
        .order_by(func.max(BatchRow.created_at).desc())
        .limit(limit)
    ).all()
    # (``run_id`` is never None: the query asks so; the check narrows the type)
    return [RunSummary(run_id, step, n, at) for run_id, step, n, at in rows if run_id is not None]


def flagged_rollouts(
    *,
    session: Session,
    run_id: str,
    threshold: float,
    limit: int = 20,
    project: str | None = None,
) -> list[FlaggedRollout]:
    """The run's newest rollouts with ``hack_score >= threshold``, newest batch first, with
    their non-info finding kinds and the id of the review item about each (a hack finding
    first, else any item of that sample)."""
    rows = session.execute(
        select(
            ResultRow.id,
            BatchRow.step,
            BatchRow.id,
            SampleRow.external_id,
            ResultRow.raw_reward,
            ResultRow.reward,
            ResultRow.hack_score,
            BatchRow.created_at,
        )
        .join(BatchRow, BatchRow.id == ResultRow.batch_id)
        .join(SampleRow, SampleRow.id == ResultRow.sample_id)
        .where(
            BatchRow.run_id == run_id,
            BatchRow.status == "done",
            ResultRow.hack_score >= threshold,
            _of_project(project),
        )
        .order_by(BatchRow.created_at.desc(), BatchRow.id, ResultRow.position)
        .limit(limit)
    ).all()
    flagged = {
        result_id: FlaggedRollout(step, batch_id, sample_id, raw, reward, hack, at)
        for result_id, step, batch_id, sample_id, raw, reward, hack, at in rows
    }
    if not flagged:
        return []
    findings = select(FindingRow.result_id, FindingRow.kind).where(
        FindingRow.result_id.in_(list(flagged)), FindingRow.severity != "info"
    )
    for result_id, kind in session.execute(findings.order_by(FindingRow.id)):
        if kind not in flagged[result_id].kinds:
            flagged[result_id].kinds.append(kind)
    by_sample: dict[tuple[str | None, str | None], FlaggedRollout] = {
        (f.batch_id, f.sample_id): f for f in flagged.values()
    }
    items = select(
        ReviewItemRow.id, ReviewItemRow.kind, ReviewItemRow.batch_id, ReviewItemRow.sample_id
    )
    items = items.where(
        ReviewItemRow.run_id == run_id,
        ReviewItemRow.batch_id.in_({f.batch_id for f in flagged.values()}),
    ).order_by(ReviewItemRow.id)
    for item_id, kind, batch_id, sample_id in session.execute(items):
        rollout = by_sample.get((batch_id, sample_id))
        if rollout is not None and (rollout.item_id is None or kind == "hack_finding"):
            rollout.item_id = item_id
    return list(flagged.values())


def labelled_rewards(
    *, session: Session, run_id: str, project: str | None = None
) -> list[tuple[int | None, float, bool]]:
    """``(step, final reward, humans say good)`` for each labelled, valid rollout of the run;
    the label is the majority of its reviewers' labels, ties left out."""
    rows = session.execute(
        select(HumanLabelRow.sample_pk, HumanLabelRow.label, BatchRow.step, ResultRow.reward)
        .join(SampleRow, SampleRow.id == HumanLabelRow.sample_pk)
        .join(BatchRow, BatchRow.id == SampleRow.batch_id)
        .join(ResultRow, ResultRow.sample_id == SampleRow.id)
        .where(
            BatchRow.run_id == run_id,
            ResultRow.valid,
            ResultRow.reward.is_not(None),
            _of_project(project),
        )
    ).all()
    votes: dict[int, int] = {}
    facts: dict[int, tuple[int | None, float]] = {}
    for sample_pk, label, step, reward in rows:
        if reward is None:  # never: the query asks for one (the check narrows the type)
            continue
        votes[sample_pk] = votes.get(sample_pk, 0) + (1 if label == "good" else -1)
        facts[sample_pk] = (step, float(reward))
    return [(*facts[pk], vote > 0) for pk, vote in votes.items() if vote != 0]


def one_judge_steps(*, session: Session, run_id: str, project: str | None = None) -> set[int]:
    """The run's steps whose finished batches (of ``project``) all had a one-judge panel (the
    plan's judges): a panel of one agrees with itself, its agreement says nothing."""
    largest: dict[int, int] = {}
    rows = session.execute(
        select(BatchRow.step, BatchRow.plan).where(
            BatchRow.run_id == run_id,
            BatchRow.status == "done",
            BatchRow.step.is_not(None),
            _of_project(project),
        )
    )
    for step, plan in rows:
        if step is None:  # never: the query asks for one (the check narrows the type)
            continue
        largest[step] = max(largest.get(step, 0), len(plan.judges))
    return {step for step, size in largest.items() if size == 1}
