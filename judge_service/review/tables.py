"""Tables of the review queue and mining: mining jobs, review items and their decisions.

On the same ``Base`` as the others, so one Alembic metadata covers them all. JSON columns are
``AsciiJSON``: PostgreSQL rejects NUL in text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from judge_service.core.storage.tables import Base
from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow


class MiningJobRow(Base):
    """A queued request to mine a run for rubric items, and what it produced."""

    __tablename__ = "mining_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project: Mapped[str] = mapped_column(String(64), default="default", server_default="default")
    rubric: Mapped[str] = mapped_column(String(128), index=True)
    run_id: Mapped[str] = mapped_column(String(256))
    model: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    max_items: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    result: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    error: Mapped[str | None] = mapped_column(Text)
    #: When a worker's sweeper last re-sent its task (a queued job whose message was lost).
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class ReviewItemRow(Base):
    """An item waiting for (or past) a human decision.

    ``dedupe_key`` is unique so that a task run twice never queues the same item twice.
    """

    __tablename__ = "review_items"
    __table_args__ = (Index("ix_review_items_status_kind", "status", "kind"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    dedupe_key: Mapped[str] = mapped_column(String(300), unique=True)
    project: Mapped[str] = mapped_column(
        String(64), default="default", server_default="default", index=True
    )
    rubric: Mapped[str | None] = mapped_column(String(128), index=True)
    run_id: Mapped[str | None] = mapped_column(String(256), index=True)
    batch_id: Mapped[str | None] = mapped_column(String(32))
    sample_pk: Mapped[int | None] = mapped_column(
        ForeignKey("samples.id", ondelete="SET NULL"), index=True
    )
    sample_id: Mapped[str | None] = mapped_column(String(256))
    priority: Mapped[float] = mapped_column(Float, default=0.0)
    payload: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())
    evidence: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    decided_by: Mapped[str | None] = mapped_column(String(64))

    decisions: Mapped[list[ReviewDecisionRow]] = relationship(order_by="ReviewDecisionRow.id")


class ReviewDecisionRow(Base):
    """A reviewer's decision on an item (also written to the audit log)."""

    __tablename__ = "review_decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    item_id: Mapped[int] = mapped_column(
        ForeignKey("review_items.id", ondelete="CASCADE"), index=True
    )
    decision: Mapped[str] = mapped_column(String(16))
    reviewer: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    text: Mapped[str | None] = mapped_column(Text)
    weight: Mapped[float | None] = mapped_column(Float)
    note: Mapped[str | None] = mapped_column(Text)
    outcome: Mapped[str | None] = mapped_column(String(300))
