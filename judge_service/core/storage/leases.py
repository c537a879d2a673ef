"""Leases on batches: which worker process scores a batch, and until when.

The database, not the broker, knows who is scoring what. A worker takes the lease
with one conditional UPDATE (the row matches only while nobody holds a live lease), so
two workers can never both hold it: PostgreSQL re-checks the condition after waiting
for a concurrent writer's row lock, and SQLite runs one writer at a time. Times come
from the workers' clocks (kept by NTP); a lease outlives a few seconds of skew.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, NamedTuple

from sqlalchemy import ColumnElement, func, or_, select, update
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import BatchRow
from judge_service.core.storage.types import rows_changed, utcnow

Taken = Literal["taken", "done", "leased", "missing"]
UNFINISHED = ("queued", "running")


def _free(now: datetime) -> ColumnElement[bool]:
    """Nobody holds a live lease on the batch."""
    return or_(BatchRow.lease_until.is_(None), BatchRow.lease_until < now)


def take(
    *, session: Session, batch_id: str, owner: str, lease_s: float, now: datetime | None = None
) -> Taken:
    """Lease the batch to ``owner`` for ``lease_s`` seconds. ``taken`` when it is now
    ours; else why not: ``done``, ``leased`` (someone else holds a live lease, or we
    already do) or ``missing``."""
    now = now or utcnow()
    statement = (
        update(BatchRow)
        .where(BatchRow.id == batch_id, BatchRow.status.in_(UNFINISHED), _free(now))
        .values(lease_owner=owner, lease_until=now + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    if rows_changed(session.execute(statement)) == 1:
        return "taken"
    status = session.scalar(select(BatchRow.status).where(BatchRow.id == batch_id))
    if status is None:
        return "missing"
    return "done" if status == "done" else "leased"


def renew(
    *,
    session: Session,
    batch_ids: list[str],
    owner: str,
    lease_s: float,
    now: datetime | None = None,
) -> set[str]:
    """Extend ``owner``'s leases on ``batch_ids``; the ids it still holds (one it lost,
    because its lease lapsed and another worker took it, is missing)."""
    if not batch_ids:
        return set()
    now = now or utcnow()
    statement = (
        update(BatchRow)
        .where(
            BatchRow.id.in_(batch_ids),
            BatchRow.lease_owner == owner,
            BatchRow.status.in_(UNFINISHED),
        )
        .values(lease_until=now + timedelta(seconds=lease_s))
        .returning(BatchRow.id)
        .execution_options(synchronize_session=False)
    )
    return set(session.scalars(statement))


def release(*, session: Session, batch_id: str, owner: str) -> None:
    """Give the lease up (the batch is done, or this worker stops scoring it)."""
    session.execute(
        update(BatchRow)
        .where(BatchRow.id == batch_id, BatchRow.lease_owner == owner)
        .values(lease_owner=None, lease_until=None)
        .execution_options(synchronize_session=False)
    )


def hand_back(
    *,
    session: Session,
    batch_ids: list[str],
    owner: str,
    quiet_s: float,
    now: datetime | None = None,
) -> int:
    """Give up ``owner``'s unfinished batches among ``batch_ids`` (the process stops): their
    leases are released, and their task is recorded as sent ``quiet_s`` ago, so that the
    next sweep, of any worker or of this service's next start, re-sends them at once rather
    than a lease later. A batch another worker holds now is left alone. How many."""
    if not batch_ids:
        return 0
    now = now or utcnow()
    statement = (
        update(BatchRow)
        .where(
            BatchRow.id.in_(batch_ids),
            BatchRow.status.in_(UNFINISHED),
            or_(BatchRow.lease_owner == owner, _free(now)),
        )
        .values(lease_owner=None, lease_until=None, dispatched_at=now - timedelta(seconds=quiet_s))
        .execution_options(synchronize_session=False)
    )
    return rows_changed(session.execute(statement))


class Stale(NamedTuple):
    """An unfinished batch nobody holds, whose task was last sent long ago."""

    id: str
    deadline_at: datetime


def _unattended(now: datetime, quiet_s: float) -> tuple[ColumnElement[bool], ...]:
    """Unfinished, no live lease, and no task sent for it in the last ``quiet_s`` seconds."""
    sent = func.coalesce(BatchRow.dispatched_at, BatchRow.created_at)
    return (
        BatchRow.status.in_(UNFINISHED),
        _free(now),
        sent < now - timedelta(seconds=quiet_s),
    )


def stale(
    *, session: Session, quiet_s: float, limit: int = 100, now: datetime | None = None
) -> list[Stale]:
    """Batches no worker holds whose task was last sent over ``quiet_s`` seconds ago,
    oldest first: their worker died, or the broker lost their message."""
    now = now or utcnow()
    query = (
        select(BatchRow.id, BatchRow.deadline_at)
        .where(*_unattended(now, quiet_s))
        .order_by(BatchRow.created_at)
        .limit(limit)
    )
    return [Stale(*row) for row in session.execute(query)]


def claim_redispatch(
    *, session: Session, batch_id: str, quiet_s: float, now: datetime | None = None
) -> bool:
    """Record that the caller re-sends the batch's task now; False when it need not (a
    worker took it, or another sweeper re-sent it first). One winner per ``quiet_s``."""
    now = now or utcnow()
    statement = (
        update(BatchRow)
        .where(BatchRow.id == batch_id, *_unattended(now, quiet_s))
        .values(dispatched_at=now)
        .execution_options(synchronize_session=False)
    )
    return rows_changed(session.execute(statement)) == 1


def holder(*, session: Session, batch_id: str) -> tuple[str | None, datetime | None]:
    """``(lease_owner, lease_until)`` of the batch (both None when nobody holds it)."""
    row = session.execute(
        select(BatchRow.lease_owner, BatchRow.lease_until).where(BatchRow.id == batch_id)
    ).first()
    return (row[0], row[1]) if row else (None, None)
