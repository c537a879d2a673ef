"""The known-hack corpus: reviewed suspected hacks, which the known-hack detector quotes.

Here, below both, because scoring reads it and the review queue writes it. On the same
``Base`` as the others, so one Alembic metadata covers them all; ``item_id`` names a review
item by its table (``review_items``), so this module imports nothing of the review queue.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from judge_service.core.storage.tables import Base
from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow


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
