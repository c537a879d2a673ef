"""Tables of the rubrics: rubric versions and the human labels of scored rollouts.

Kept apart from ``core.storage.tables`` (the scoring path) but on the same ``Base``, so one
Alembic metadata covers them all. JSON columns are ``AsciiJSON``: PostgreSQL rejects NUL in text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint, event
from sqlalchemy.orm import Mapped, mapped_column

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
