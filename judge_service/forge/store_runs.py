"""A run's scored samples by task, for difficulty tiers (``GET /v1/runs/{run_id}/tasks``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import BatchRow, ResultRow, SampleRow
from judge_service.forge.store import store_tiers
from judge_service.forge.tiers import ScoredSample, TaskStats, task_stats, tier_shares


def _of_run(run_id: str, project: str | None) -> ColumnElement[bool]:
    """The run's batches; of ``project`` only unless it is None."""
    found = BatchRow.run_id == run_id
    return found if project is None else found & (BatchRow.project == project)


def run_task_samples(
    *, session: Session, run_id: str, project: str | None = None
) -> list[ScoredSample]:
    """Every scored sample of the run's finished batches, keyed by ``metadata.task_id`` or,
    without one, by ``group_id``; samples with neither are left out."""
    rows = session.execute(
        select(
            BatchRow.step, SampleRow.group_id, SampleRow.payload, ResultRow.valid, ResultRow.reward
        )
        .join(BatchRow, BatchRow.id == ResultRow.batch_id)
        .join(SampleRow, SampleRow.id == ResultRow.sample_id)
        .where(_of_run(run_id, project), BatchRow.status == "done")
        .order_by(BatchRow.created_at, ResultRow.position)
    ).all()
    samples = []
    for step, group_id, payload, valid, reward in rows:
        metadata = payload.get("metadata") if isinstance(payload, dict) else None
        task = (metadata or {}).get("task_id") if isinstance(metadata, dict) else None
        key = str(task) if task not in (None, "") else group_id
        if key is not None:
            samples.append(ScoredSample(key, step, bool(valid), reward))
    return samples


def run_last_batch_at(
    *, session: Session, run_id: str, project: str | None = None
) -> datetime | None:
    """When the run's latest batch arrived: which run is "latest" for a task's tier."""
    query = select(func.max(BatchRow.created_at)).where(_of_run(run_id, project))
    return session.scalar(query)


def run_tiers(
    *, session: Session, run_id: str, project: str | None = None
) -> tuple[list[TaskStats], dict[int, dict]]:
    """The run's per-task stats and per-step tier shares, read only (the run page's view)."""
    samples = run_task_samples(session=session, run_id=run_id, project=project)
    stats = task_stats(samples)
    return stats, tier_shares(samples, stats)


def apply_run_tiers(
    *, session: Session, run_id: str, project: str | None = None
) -> tuple[list[TaskStats], dict, set[str]]:
    """:func:`run_tiers`, and the tiers are stored on the forged tasks the run trained on
    (of the same project; unless a later run's are there). Also returns which took them."""
    stats, shares = run_tiers(session=session, run_id=run_id, project=project)
    at = run_last_batch_at(session=session, run_id=run_id, project=project)
    tiers = {s.task: s.as_dict() for s in stats if s.tier is not None}
    stored: set[str] = set()
    if at is not None and tiers:
        stored = store_tiers(session=session, run_id=run_id, at=at, tiers=tiers, project=project)
    return stats, shares, stored
