"""The workers table: one row per worker process, its heartbeat (``storage.workers``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from judge_service.core.storage.tables import Base
from judge_service.core.storage.types import UTCDateTime, utcnow


class WorkerRow(Base):
    """A worker process (Celery pool process) as its heartbeat last saw it.

    ``id`` is also the ``lease_owner`` of the batches it holds. ``stopped_at`` is set on
    a clean shutdown; a killed process simply stops beating.
    """

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(256))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    busy: Mapped[int] = mapped_column(Integer, default=0)
