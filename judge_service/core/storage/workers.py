"""Worker heartbeats: each worker process upserts its row every few seconds.

The API reads them to list the live workers (``/readyz``) and to refuse work when no
worker has been alive for ``JS_WORKER_GRACE_S``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from judge_service.core.storage.types import rows_changed, utcnow
from judge_service.core.storage.upsert import insert_or_ignore
from judge_service.core.storage.worker_tables import WorkerRow


class WorkerSeen(NamedTuple):
    """A worker process as its last heartbeat left it."""

    id: str
    hostname: str
    pid: int
    started_at: datetime
    seen_at: datetime
    busy: int


def beat(
    *,
    session: Session,
    worker_id: str,
    hostname: str,
    pid: int,
    busy: int,
    now: datetime | None = None,
) -> None:
    """Record that the worker is alive now, scoring ``busy`` tasks."""
    now = now or utcnow()
    updated = rows_changed(
        session.execute(
            update(WorkerRow)
            .where(WorkerRow.id == worker_id)
            .values(seen_at=now, busy=busy, stopped_at=None)
            .execution_options(synchronize_session=False)
        )
    )
    if not updated:
        values = {"id": worker_id, "hostname": hostname, "pid": pid, "busy": busy}
        insert_or_ignore(session, WorkerRow, {**values, "started_at": now, "seen_at": now}, ["id"])


def stopped(*, session: Session, worker_id: str, now: datetime | None = None) -> None:
    """The worker shut down cleanly: no longer listed as live (its last beat still counts
    for ``newest_beat``, so a rolling restart is not a moment without workers)."""
    session.execute(
        update(WorkerRow)
        .where(WorkerRow.id == worker_id)
        .values(stopped_at=now or utcnow(), busy=0)
        .execution_options(synchronize_session=False)
    )


def live(*, session: Session, within_s: float, now: datetime | None = None) -> list[WorkerSeen]:
    """Workers running now: a heartbeat in the last ``within_s`` seconds and not stopped."""
    since = (now or utcnow()) - timedelta(seconds=within_s)
    query = (
        select(
            WorkerRow.id,
            WorkerRow.hostname,
            WorkerRow.pid,
            WorkerRow.started_at,
            WorkerRow.seen_at,
            WorkerRow.busy,
        )
        .where(WorkerRow.seen_at >= since, WorkerRow.stopped_at.is_(None))
        .order_by(WorkerRow.hostname, WorkerRow.pid)
    )
    return [WorkerSeen(*row) for row in session.execute(query)]


def newest_beat(*, session: Session) -> datetime | None:
    """The most recent heartbeat of any worker (None: no worker ever beat)."""
    return session.scalar(select(func.max(WorkerRow.seen_at)))


def forget_older_than(*, session: Session, age_s: float, now: datetime | None = None) -> int:
    """Delete rows of workers gone for ``age_s`` seconds (each restart adds a row)."""
    before = (now or utcnow()) - timedelta(seconds=age_s)
    return rows_changed(session.execute(delete(WorkerRow).where(WorkerRow.seen_at < before)))
