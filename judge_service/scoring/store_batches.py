"""Repository for batches and their samples."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from pydantic import JsonValue
from sqlalchemy import Row, Table, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from judge_service.core.batch_plan import BatchPlan
from judge_service.core.storage.tables import BatchRow, ResultRow, SampleRow
from judge_service.core.storage.types import utcnow


def create_batch(
    *,
    session: Session,
    batch_id: str,
    samples: list[dict[str, JsonValue]],
    plan: BatchPlan,
    request_hash: str,
    timeout_s: float,
    run_id: str | None = None,
    step: int | None = None,
    rubric_ref: str | None = None,
    idempotency_key: str | None = None,
    api_key_id: str | None = None,
    now: datetime | None = None,
    status: str = "queued",
    project: str = "default",
) -> BatchRow:
    """Insert a batch and all its samples (the caller commits before acknowledging)."""
    now = now or utcnow()
    batch = BatchRow(
        id=batch_id,
        status=status,
        created_at=now,
        started_at=now if status == "running" else None,
        deadline_at=now + timedelta(seconds=timeout_s),
        timeout_s=timeout_s,
        run_id=run_id,
        step=step,
        rubric_ref=rubric_ref,
        plan=plan,
        idempotency_key=idempotency_key,
        request_hash=request_hash,
        api_key_id=api_key_id,
        n_samples=len(samples),
        project=project,
    )
    session.add(batch)
    session.flush()
    session.execute(  # one executemany: ORM objects cost ~10x more for big batches
        insert(_SAMPLES),
        [
            {
                "batch_id": batch_id,
                "position": position,
                "external_id": payload["id"],
                "group_id": payload.get("group_id"),
                "payload": payload,
            }
            for position, payload in enumerate(samples)
        ],
    )
    return batch


def get_batch(*, session: Session, batch_id: str, for_update: bool = False) -> BatchRow | None:
    """The batch; ``for_update`` locks its row until the transaction ends (PostgreSQL)."""
    return session.get(BatchRow, batch_id, with_for_update=for_update or None)


def find_by_idempotency_key(*, session: Session, key: str) -> BatchRow | None:
    return session.scalars(select(BatchRow).where(BatchRow.idempotency_key == key)).first()


def unscored_samples(*, session: Session, batch_id: str) -> list[Row[int, int, dict[str, Any]]]:
    """``(id, position, payload)`` rows of the samples that have no result yet, in order."""
    scored = select(ResultRow.sample_id).where(ResultRow.batch_id == batch_id)
    return list(
        session.execute(
            select(SampleRow.id, SampleRow.position, SampleRow.payload)
            .where(SampleRow.batch_id == batch_id, SampleRow.id.not_in(scored))
            .order_by(SampleRow.position)
        ).all()
    )


def sample_rows(*, session: Session, batch_id: str) -> dict[int, int]:
    """``{position: sample row id}`` of every sample of the batch."""
    query = select(SampleRow.position, SampleRow.id).where(SampleRow.batch_id == batch_id)
    return {position: row_id for position, row_id in session.execute(query)}


def sample_keys(*, session: Session, batch_id: str) -> list[Row[int, int, str, str | None]]:
    """``(id, position, external_id, group_id)`` of every sample, without the payloads."""
    return list(
        session.execute(
            select(SampleRow.id, SampleRow.position, SampleRow.external_id, SampleRow.group_id)
            .where(SampleRow.batch_id == batch_id)
            .order_by(SampleRow.position)
        ).all()
    )


def may_need_review(
    *, session: Session, batch_id: str, hack_score: float, agreement: float
) -> bool:
    """True when some result reaches ``hack_score`` or falls under ``agreement`` (a cheap
    pre-check before the review policy reads the whole batch back)."""
    query = (
        select(ResultRow.id)
        .where(
            ResultRow.batch_id == batch_id,
            (ResultRow.hack_score >= hack_score) | (ResultRow.agreement < agreement),
        )
        .limit(1)
    )
    return session.scalar(query) is not None


def count_results(*, session: Session, batch_id: str) -> int:
    query = select(func.count()).select_from(ResultRow).where(ResultRow.batch_id == batch_id)
    return int(session.scalar(query) or 0)


def mark_running(*, session: Session, batch_id: str) -> None:
    session.execute(
        update(BatchRow)
        .where(BatchRow.id == batch_id, BatchRow.status == "queued")
        .values(status="running", started_at=utcnow())
    )


def mark_done(*, session: Session, batch_id: str) -> None:
    """Mark the batch done, for a caller that knows every sample has its result.

    A Core UPDATE on the session's connection: the ORM's bulk-update path (and its
    in-session synchronisation, for objects this session never loaded) costs ~1 ms.
    """
    session.connection().execute(_MARK_DONE, {"batch": batch_id, "finished": utcnow()})


#: The mapped tables: SQLAlchemy types a mapped class's ``__table__`` as any ``FromClause``,
#: but a class declared with a ``__tablename__`` maps a ``Table``.
_BATCHES = cast(Table, BatchRow.__table__)
_SAMPLES = cast(Table, SampleRow.__table__)
#: Built once: building the statement anew each time costs more than running it.
_MARK_DONE = (
    update(_BATCHES)
    .where(_BATCHES.c.id == bindparam("batch"), _BATCHES.c.status != "done")
    .values(status="done", finished_at=bindparam("finished"))
)


def finish_if_complete(*, session: Session, batch_id: str) -> bool:
    """Mark the batch done once every sample has its result; True when it is done."""
    batch = session.get(BatchRow, batch_id, populate_existing=True)
    if batch is None:
        return False
    if batch.status == "done":
        return True
    if count_results(session=session, batch_id=batch_id) < batch.n_samples:
        return False
    mark_done(session=session, batch_id=batch_id)
    return True
