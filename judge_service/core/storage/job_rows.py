"""What every background job's row shares: a worker's claim to run it, and its end.

Mining, forge and world jobs are rows with a ``status`` that a worker moves from ``queued`` to
``running``; a message the broker re-delivers finds its job ``running`` and runs it again
(each kind's writes are safe to repeat), but never one that has ended.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from judge_service.core.storage.types import rows_changed, safe_text, utcnow


def start_job_row(*, session: Session, table: Any, job_id: str) -> bool:
    """Mark the job ``job_id`` of ``table`` running; False if it already ended (or is not
    there)."""
    result = session.execute(
        update(table)
        .where(table.id == job_id, table.status.in_(("queued", "running")))
        .values(status="running", started_at=utcnow())
    )
    return rows_changed(result) == 1


def finish_job_row(
    *, session: Session, table: Any, job_id: str, error: str | None, **outputs: Any
) -> None:
    """End the job ``job_id`` of ``table``: ``failed`` with ``error`` (clipped), else ``done``,
    storing its ``outputs`` (the kind's own result columns) either way."""
    session.execute(
        update(table)
        .where(table.id == job_id)
        .values(
            status="failed" if error else "done",
            finished_at=utcnow(),
            error=safe_text(error, 4000),
            **outputs,
        )
    )
