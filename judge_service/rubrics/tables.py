"""Tables of the human loop: rubric versions, the review queue, decisions, labels, known hacks.

Kept apart from ``tables.py`` (the scoring path) but on the same ``Base``, so one Alembic
metadata covers both. JSON columns are ``AsciiJSON``: PostgreSQL rejects NUL in text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    event,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from judge_service.core.storage.tables import Base
from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow


class RubricVersionRow(Base):
    """One version of a rubric. Never updated: a change is a new row with the next version."""

    __tablename__ = "rubric_versions"
    __table_args__ = (
        UniqueConstraint("project", "name", "version", name="uq_rubric_versions_project"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = mapped_column(
        String(64), default="default", server_default="default", index=True
    )
    name: Mapped[str] = mapped_column(String(128), index=True)
    version: Mapped[int] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text, default="")
    criteria: Mapped[list[dict[str, Any]]] = mapped_column(AsciiJSON())
    prompts: Mapped[dict[str, str]] = mapped_column(AsciiJSON())
    penalty: Mapped[str | None] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="approved")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(64))
    source: Mapped[str | None] = mapped_column(String(256))

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@event.listens_for(RubricVersionRow, "before_update")
def _versions_are_immutable(mapper: Any, connection: Any, target: RubricVersionRow) -> None:
    """A reward computed with ``name@N`` must stay explainable: ``name@N`` never changes."""
    raise ValueError(f"rubric version {target.ref} is immutable; write the next version")


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


class HumanLabelRow(Base):
    """A reviewer's good/bad label of one scored rollout; one per reviewer and sample."""

    __tablename__ = "human_labels"
    __table_args__ = (UniqueConstraint("sample_pk", "reviewer"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sample_pk: Mapped[int] = mapped_column(ForeignKey("samples.id", ondelete="CASCADE"), index=True)
    batch_id: Mapped[str] = mapped_column(String(32))
    sample_id: Mapped[str] = mapped_column(String(256))
    label: Mapped[str] = mapped_column(String(8))
    reviewer: Mapped[str] = mapped_column(String(64))
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class KnownHackRow(Base):
    """A reviewed suspected hack: ``confirmed`` rows are the known-hack corpus, the others the
    negatives (flagged, but a human said it was honest). The sample is copied whole, so the
    corpus outlives the batch it came from."""

    __tablename__ = "known_hacks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    item_id: Mapped[int | None] = mapped_column(
        ForeignKey("review_items.id", ondelete="SET NULL"), unique=True
    )
    #: The known-hack detector quotes a matched hack: a batch meets its own project's only.
    project: Mapped[str] = mapped_column(
        String(64), default="default", server_default="default", index=True
    )
    confirmed: Mapped[bool] = mapped_column(Boolean, index=True)
    sample: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())
    finding: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())
    hack_score: Mapped[float] = mapped_column(Float)
    run_id: Mapped[str | None] = mapped_column(String(256))
    reviewer: Mapped[str] = mapped_column(String(64))
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
