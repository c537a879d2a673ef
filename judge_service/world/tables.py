"""The table of worlds: what a world was built from, how the build went, and the world itself.

The world (the JSON of :class:`~judge_service.world.world.World`, megabytes for a large
corpus) is a deferred column: listing worlds or reading one's report never loads it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from judge_service.core.storage.tables import Base
from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow


class WorldRow(Base):
    """A world built from the traces of forge jobs, as a background job (kind ``world``)."""

    __tablename__ = "worlds"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    #: The project of the forge jobs it was built from, and of everything it serves.
    project: Mapped[str] = mapped_column(
        String(64), default="default", server_default="default", index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    #: The forge job ids, in the order given.
    jobs: Mapped[list[str]] = mapped_column(AsciiJSON())
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    counts: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    #: Per tool (paths, transitions, fidelity) and the fidelity on the held-out runs.
    report: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    world: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON(), deferred=True)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: When a worker's sweeper last re-sent its task (a queued build whose message was lost).
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: The models its episodes use unless a reset names others: ``{"simulator",
    #: "user_model"}``, model specs (either may be absent).
    models: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
