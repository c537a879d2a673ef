"""Repository for forge jobs, task families and tasks."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, select, update
from sqlalchemy.orm import Session

from judge_service.core.storage.job_rows import finish_job_row, start_job_row
from judge_service.forge.tables import ForgeJobRow, ForgeTaskRow, TaskFamilyRow

FAMILY_STATUS = {"approve": "approved", "reject": "retired"}


def stable_id(*parts: Any, size: int = 20) -> str:
    """An id that a re-run of the same job gives again (so re-delivery writes the same rows)."""
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:size]


def _job_ids(project: str) -> Select[tuple[str]]:
    """The ids of ``project``'s jobs (their families and tasks are the project's)."""
    return select(ForgeJobRow.id).where(ForgeJobRow.project == project)


def create_job(
    *,
    session: Session,
    kind: str,
    options: dict[str, Any],
    inputs: Any,
    created_by: str | None,
    project: str = "default",
) -> ForgeJobRow:
    row = ForgeJobRow(
        id=uuid.uuid4().hex,
        project=project,
        kind=kind,
        status="queued",
        options=options,
        inputs=inputs,
        created_by=created_by,
    )
    session.add(row)
    session.flush()
    return row


def get_job(*, session: Session, job_id: str) -> ForgeJobRow | None:
    return session.get(ForgeJobRow, job_id, populate_existing=True)


def start_job(*, session: Session, job_id: str) -> bool:
    """Mark a queued (or re-delivered running) job as running; False if it already ended."""
    return start_job_row(session=session, table=ForgeJobRow, job_id=job_id)


def finish_job(
    *,
    session: Session,
    job_id: str,
    counts: dict[str, Any] | None,
    result: dict[str, Any] | None,
    error: str | None = None,
) -> None:
    finish_job_row(
        session=session,
        table=ForgeJobRow,
        job_id=job_id,
        error=error,
        counts=counts or {},
        result=result or {},
    )


def clear_job_output(*, session: Session, job_id: str) -> None:
    """Drop what an interrupted run of the job wrote, so the re-run writes it whole."""
    session.execute(delete(ForgeTaskRow).where(ForgeTaskRow.job_id == job_id))
    session.execute(delete(TaskFamilyRow).where(TaskFamilyRow.job_id == job_id))


def add_family(
    *,
    session: Session,
    job_id: str,
    index: int,
    name: str,
    terms: list[str],
    tasks: int,
    failed_traces: int = 0,
) -> TaskFamilyRow:
    row = TaskFamilyRow(
        id=stable_id(job_id, "family", index),
        job_id=job_id,
        name=name[:300],
        terms=terms,
        status="pending",
        tasks=tasks,
        failed_traces=failed_traces,
    )
    session.add(row)
    session.flush()
    return row


def add_task(
    *, session: Session, family: TaskFamilyRow, position: int, **fields: Any
) -> ForgeTaskRow:
    row = ForgeTaskRow(
        id=stable_id(family.job_id, "task", position, size=16),
        job_id=family.job_id,
        family_id=family.id,
        position=position,
        **fields,
    )
    session.add(row)
    return row


def job_families(*, session: Session, job_id: str) -> list[TaskFamilyRow]:
    query = select(TaskFamilyRow).where(TaskFamilyRow.job_id == job_id)
    return list(session.scalars(query.order_by(TaskFamilyRow.created_at, TaskFamilyRow.id)))


def decide_family(*, session: Session, family_id: str, decision: str) -> str | None:
    """Approve (its tasks become exportable) or retire a family; its new status, or None."""
    status = FAMILY_STATUS.get(decision)
    if status is None or session.get(TaskFamilyRow, family_id) is None:
        return None
    session.execute(
        update(TaskFamilyRow).where(TaskFamilyRow.id == family_id).values(status=status)
    )
    return status


def decide_family_item(*, session: Session, payload: dict[str, Any], decision: str) -> str | None:
    """A reviewer's decision on a ``task_family`` review item (``Feature.review_decisions``):
    approved, its tasks export; rejected, it is retired. The outcome, or None."""
    family_id = str(payload.get("family_id"))
    status = decide_family(session=session, family_id=family_id, decision=decision)
    return f"task_family:{family_id}:{status}" if status else None


def list_tasks(
    *,
    session: Session,
    family: str | None = None,
    tier: str | None = None,
    approved: bool | None = None,
    job_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    project: str | None = None,
) -> list[tuple[ForgeTaskRow, TaskFamilyRow]]:
    """Tasks with their family, oldest job first. ``family`` is a family id or name;
    ``approved=True`` keeps approved families only, ``False`` the others; ``project``
    keeps that project's jobs' tasks (None: every project's)."""
    query = select(ForgeTaskRow, TaskFamilyRow).join(
        TaskFamilyRow, TaskFamilyRow.id == ForgeTaskRow.family_id
    )
    if project is not None:
        query = query.where(ForgeTaskRow.job_id.in_(_job_ids(project)))
    if family is not None:
        query = query.where((TaskFamilyRow.id == family) | (TaskFamilyRow.name == family))
    if tier is not None:
        query = query.where(ForgeTaskRow.tier == tier)
    if approved is not None:
        approved_only = TaskFamilyRow.status == "approved"
        query = query.where(approved_only if approved else ~approved_only)
    if job_id is not None:
        query = query.where(ForgeTaskRow.job_id == job_id)
    query = query.order_by(ForgeTaskRow.created_at, ForgeTaskRow.job_id, ForgeTaskRow.position)
    if limit is not None:
        query = query.limit(limit)
    return [(task, fam) for task, fam in session.execute(query.offset(offset)).all()]


def store_tiers(
    *,
    session: Session,
    run_id: str,
    at: datetime,
    tiers: dict[str, dict[str, Any]],
    project: str | None = None,
) -> set[str]:
    """Write a run's tiers onto the tasks it trained on (of ``project``'s jobs), unless a
    later run's are there; returns the ids of the tasks that took them."""
    if not tiers:
        return set()
    query = select(ForgeTaskRow).where(ForgeTaskRow.id.in_(list(tiers)))
    if project is not None:
        query = query.where(ForgeTaskRow.job_id.in_(_job_ids(project)))
    rows = session.scalars(query)
    stored: set[str] = set()
    for row in rows:
        if row.tier_at is not None and row.tier_at > at and row.tier_run_id != run_id:
            continue
        stats = tiers[row.id]
        row.tier, row.tier_run_id, row.tier_at, row.tier_stats = stats["tier"], run_id, at, stats
        stored.add(row.id)
    session.flush()
    return stored


def get_task(*, session: Session, task_id: str) -> tuple[ForgeTaskRow, TaskFamilyRow, str] | None:
    """A task with its family and its job's project."""
    query = (
        select(ForgeTaskRow, TaskFamilyRow, ForgeJobRow.project)
        .join(TaskFamilyRow, TaskFamilyRow.id == ForgeTaskRow.family_id)
        .join(ForgeJobRow, ForgeJobRow.id == ForgeTaskRow.job_id)
        .where(ForgeTaskRow.id == task_id)
    )
    row = session.execute(query).first()
    return None if row is None else (row[0], row[1], row[2])


def set_end_state(
    *, session: Session, task: ForgeTaskRow, end_state: dict[str, Any], source: str
) -> None:
    """A reviewer's reference end state for a trace task; it then needs no review."""
    task.end_state, task.end_state_source, task.needs_review = end_state, source, False
    session.flush()
