"""Mining, forge and world jobs whose task message the broker lost, and the claim to re-send.

A job is *lost* when it is still ``queued`` (no worker ever started it) and its task went
out over ``quiet_s`` seconds ago. The sweepers ask only when their process has had a free
slot for half a lease, so a message still in the queue would have been taken by now. A
``running`` job is not lost here: its message is unacknowledged in the broker (late
acknowledgement), which redelivers it if its worker dies. The embedded executor has no
broker to redeliver: it asks for ``running`` jobs too, only when no other worker is alive
(``worker.liveness``). Jobs have no lease: a re-sent job that a worker runs twice still
stores each item once (mining's ``dedupe_key``, the forge's ``clear_job_output``, a world's
one write at the end).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session

from judge_service.core.features import job_kinds, load
from judge_service.core.storage.types import rows_changed, utcnow

JobStatus = Literal["queued", "running"]
#: What a worker behind a broker treats as lost: the broker redelivers ``running`` jobs.
QUEUED: tuple[JobStatus, ...] = ("queued",)
#: A job table: any mapped class with ``id``, ``status``, ``created_at``, ``dispatched_at``.
JobTable = Any


class LostJob(NamedTuple):
    #: The job kind's name (``core.features.JobKind.name``).
    kind: str
    id: str


def _tables() -> dict[str, JobTable]:
    """Each registered job kind's table, by kind."""
    return {name: load(kind.table) for name, kind in job_kinds().items()}


def _lost(
    table: JobTable,
    now: datetime,
    quiet_s: float,
    statuses: tuple[JobStatus, ...],
) -> tuple[ColumnElement[bool], ...]:
    """In one of ``statuses``, and no task sent for it in the last ``quiet_s`` seconds."""
    sent = func.coalesce(table.dispatched_at, table.created_at)
    return table.status.in_(statuses), sent < now - timedelta(seconds=quiet_s)


def lost_jobs(
    *,
    session: Session,
    quiet_s: float,
    limit: int = 100,
    now: datetime | None = None,
    statuses: tuple[JobStatus, ...] = QUEUED,
) -> list[LostJob]:
    """Jobs of every kind in ``statuses`` whose task went out over ``quiet_s`` seconds ago,
    oldest first within each kind."""
    now = now or utcnow()
    found: list[LostJob] = []
    for kind, table in _tables().items():
        query = (
            select(table.id)
            .where(*_lost(table, now, quiet_s, statuses))
            .order_by(table.created_at)
            .limit(limit)
        )
        found += [LostJob(kind, job_id) for job_id in session.scalars(query)]
    return found


def claim_redispatch(
    *,
    session: Session,
    job: LostJob,
    quiet_s: float,
    now: datetime | None = None,
    statuses: tuple[JobStatus, ...] = QUEUED,
) -> bool:
    """Record that the caller re-sends the job's task now; False when it need not (a worker
    started it, or another sweeper re-sent it first). One winner per ``quiet_s``."""
    now = now or utcnow()
    table = _tables()[job.kind]
    statement = (
        update(table)
        .where(table.id == job.id, *_lost(table, now, quiet_s, statuses))
        .values(dispatched_at=now)
        .execution_options(synchronize_session=False)
    )
    return rows_changed(session.execute(statement)) == 1
