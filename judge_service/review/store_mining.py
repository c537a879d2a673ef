"""Repository for mining jobs: queued by the API, run by a worker, read back by the API."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from judge_service.core.storage.job_rows import finish_job_row, start_job_row
from judge_service.review.tables import MiningJobRow


def create_job(
    *,
    session: Session,
    rubric: str,
    run_id: str,
    model: dict[str, Any] | None,
    max_items: int,
    created_by: str | None,
    project: str = "default",
) -> MiningJobRow:
    row = MiningJobRow(
        id=uuid.uuid4().hex,
        project=project,
        rubric=rubric,
        run_id=run_id,
        model=model,
        max_items=max_items,
        status="queued",
        created_by=created_by,
    )
    session.add(row)
    session.flush()
    return row


def get_job(*, session: Session, job_id: str) -> MiningJobRow | None:
    return session.get(MiningJobRow, job_id, populate_existing=True)


def start_job(*, session: Session, job_id: str) -> bool:
    """Mark a queued (or a re-delivered running) job as running; False if it already ended."""
    return start_job_row(session=session, table=MiningJobRow, job_id=job_id)


def finish_job(
    *, session: Session, job_id: str, result: dict[str, Any] | None, error: str | None = None
) -> None:
    finish_job_row(
        session=session, table=MiningJobRow, job_id=job_id, error=error, result=result or {}
    )
