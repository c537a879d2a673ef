"""Tables of signal manufacture: forge jobs, task families, and the tasks themselves.

A task's review status is its family's (``pending``, ``approved``, ``retired``): reviewers
decide families, not tasks. A task's ``tier`` is from the latest run that trained on it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from judge_service.core.storage.tables import Base
from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow


class ForgeJobRow(Base):
    """A traces or documents upload, its options, and what the forge made of it."""

    __tablename__ = "forge_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    #: Its families and tasks belong to the job's project.
    project: Mapped[str] = mapped_column(
        String(64), default="default", server_default="default", index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    options: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())
    inputs: Mapped[Any] = mapped_column(AsciiJSON())
    counts: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    result: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: When a worker's sweeper last re-sent its task (a queued job whose message was lost).
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class TaskFamilyRow(Base):
    """A cluster of tasks of one job, reviewed as a whole."""

    __tablename__ = "task_families"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("forge_jobs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(300), index=True)
    terms: Mapped[list[str]] = mapped_column(AsciiJSON())
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    tasks: Mapped[int] = mapped_column(Integer)
    failed_traces: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ForgeTaskRow(Base):
    """One training task: a prompt, its reference (when known) and where it came from."""

    __tablename__ = "forge_tasks"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("forge_jobs.id", ondelete="CASCADE"), index=True)
    family_id: Mapped[str] = mapped_column(
        ForeignKey("task_families.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    prompt: Mapped[Any] = mapped_column(AsciiJSON())
    tools: Mapped[list[Any] | None] = mapped_column(AsciiJSON())
    reference: Mapped[Any] = mapped_column(AsciiJSON(), nullable=True)
    source: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())
    with_context: Mapped[float | None] = mapped_column(Float)
    without_context: Mapped[float | None] = mapped_column(Float)
    duplicates: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[bool] = mapped_column(Boolean, default=False)
    failures: Mapped[list[dict[str, Any]]] = mapped_column(AsciiJSON())
    tier: Mapped[str | None] = mapped_column(String(16), index=True)
    tier_run_id: Mapped[str | None] = mapped_column(String(256))
    tier_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    tier_stats: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())
    #: Trace tasks: the one-line goal, and the end state the work must reach.
    goal: Mapped[str | None] = mapped_column(Text)
    end_state: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON(), nullable=True)
    #: ``consensus``, ``single_trace``, ``proposed`` (the forge weighed the candidates; in
    #: review), ``review`` (a reviewer chose a candidate) or ``upload``
    #: (a reviewer supplied one); ``None`` while no reference is agreed.
    end_state_source: Mapped[str | None] = mapped_column(String(16))
    #: The distinct end states of the task's repeats: ``[{end_state, count, traces}]``.
    end_states: Mapped[list[dict[str, Any]] | None] = mapped_column(AsciiJSON(), nullable=True)
    needs_review: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class SeenTraceRow(Base):
    """A trace already forged in a project (by id and content hash), and the tasks it went
    into: a repeat upload skips it and links to those tasks."""

    __tablename__ = "forge_seen_traces"
    __table_args__ = (
        UniqueConstraint("project", "trace_id", "content_hash", name="uq_seen_trace"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project: Mapped[str] = mapped_column(String(64))
    trace_id: Mapped[str] = mapped_column(String(256))
    content_hash: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str] = mapped_column(String(32))
    task_ids: Mapped[list[str]] = mapped_column(AsciiJSON())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
