"""Repository for the review queue: items and decisions (the known-hack corpus a decision
adds to is :mod:`judge_service.audit.store_known_hacks`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, selectinload

from judge_service.core.storage.types import utcnow
from judge_service.core.storage.upsert import insert_or_ignore
from judge_service.review.tables import ReviewDecisionRow, ReviewItemRow

PENDING = "pending"
STATUS_OF = {"approve": "approved", "reject": "rejected", "edit": "edited"}


def enqueue_item(
    *,
    session: Session,
    kind: str,
    dedupe_key: str,
    payload: dict[str, Any],
    evidence: dict[str, Any],
    rubric: str | None = None,
    run_id: str | None = None,
    batch_id: str | None = None,
    sample_pk: int | None = None,
    sample_id: str | None = None,
    priority: float = 0.0,
    project: str = "default",
) -> ReviewItemRow | None:
    """Queue an item of ``project`` unless one with ``dedupe_key`` exists; None when it
    already did."""
    values = {
        "project": project,
        "kind": kind,
        "status": PENDING,
        "dedupe_key": dedupe_key,
        "rubric": rubric,
        "run_id": run_id,
        "batch_id": batch_id,
        "sample_pk": sample_pk,
        "sample_id": sample_id,
        "priority": priority,
        "payload": payload,
        "evidence": evidence,
        "created_at": utcnow(),
    }
    item_id = insert_or_ignore(session, ReviewItemRow, values, ["dedupe_key"])
    return None if item_id is None else session.get(ReviewItemRow, item_id)


def list_items(
    *,
    session: Session,
    status: str | None = PENDING,
    kind: str | None = None,
    rubric: str | None = None,
    run_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
    project: str | None = None,
) -> list[ReviewItemRow]:
    """Items, most important first (priority, then oldest), filtered as asked (``project``
    None: every project's)."""
    query = select(ReviewItemRow)
    for column, value in (
        (ReviewItemRow.project, project),
        (ReviewItemRow.status, status),
        (ReviewItemRow.kind, kind),
        (ReviewItemRow.rubric, rubric),
        (ReviewItemRow.run_id, run_id),
    ):
        if value is not None:
            query = query.where(column == value)
    query = query.order_by(
        ReviewItemRow.priority.desc(), ReviewItemRow.created_at, ReviewItemRow.id
    )
    return list(session.scalars(query.limit(limit).offset(offset)))


def get_item(*, session: Session, item_id: int) -> ReviewItemRow | None:
    query = select(ReviewItemRow).where(ReviewItemRow.id == item_id)
    return session.scalars(query.options(selectinload(ReviewItemRow.decisions))).first()


def rubric_item_texts(
    *, session: Session, rubric: str, statuses: tuple[str, ...], project: str = "default"
) -> list[str]:
    """Texts of the rubric's mined items in ``statuses`` (to deduplicate new proposals)."""
    query = select(ReviewItemRow).where(
        ReviewItemRow.project == project,
        ReviewItemRow.kind == "rubric_item",
        ReviewItemRow.rubric == rubric,
        ReviewItemRow.status.in_(statuses),
    )
    return [str(row.payload.get("criterion", {}).get("text", "")) for row in session.scalars(query)]


def claim_for_decision(*, session: Session, item_id: int, decision: str, reviewer: str) -> bool:
    """Move a pending item to its decided status; False when someone decided it first."""
    result = session.execute(
        update(ReviewItemRow)
        .where(ReviewItemRow.id == item_id, ReviewItemRow.status == PENDING)
        .values(status=STATUS_OF[decision], decided_at=utcnow(), decided_by=reviewer)
        .execution_options(synchronize_session="fetch")
    )
    return result.rowcount == 1  # type: ignore[attr-defined]


def add_decision(
    *,
    session: Session,
    item_id: int,
    decision: str,
    reviewer: str,
    text: str | None = None,
    weight: float | None = None,
    note: str | None = None,
    outcome: str | None = None,
) -> ReviewDecisionRow:
    row = ReviewDecisionRow(
        item_id=item_id,
        decision=decision,
        reviewer=reviewer,
        text=text,
        weight=weight,
        note=note,
        outcome=outcome,
    )
    session.add(row)
    session.flush()
    return row


def recent_decisions(
    *, session: Session, limit: int = 20, project: str | None = None
) -> list[ReviewDecisionRow]:
    """The newest decisions on items of ``project`` (None: of every project)."""
    query = select(ReviewDecisionRow).order_by(ReviewDecisionRow.id.desc()).limit(limit)
    if project is not None:
        items = select(ReviewItemRow.id).where(ReviewItemRow.project == project)
        query = query.where(ReviewDecisionRow.item_id.in_(items))
    return list(session.scalars(query))
