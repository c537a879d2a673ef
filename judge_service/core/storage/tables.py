"""Typed SQLAlchemy 2 tables. Alembic migrations in ``migrations/`` create them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from judge_service.core.batch_plan import BatchPlan
from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow


class Base(DeclarativeBase):
    pass


class BatchPlanJSON(AsciiJSON):
    """A :class:`BatchPlan` kept as its JSON (the same text column as before it was typed):
    the one place the plan becomes a dict and back, so code above storage never sees one."""

    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> str | None:
        if value is not None and not isinstance(value, BatchPlan):
            raise TypeError(f"batches.plan takes a BatchPlan, not {type(value).__name__}")
        dumped = None if value is None else value.model_dump(mode="json")
        return super().process_bind_param(dumped, dialect)

    def process_result_value(self, value: str | None, dialect: Any) -> BatchPlan | None:
        data = super().process_result_value(value, dialect)
        return None if data is None else BatchPlan.model_validate(data)


class BatchRow(Base):
    """A batch as the trainer sent it, with the resolved plan to score it."""

    __tablename__ = "batches"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    deadline_at: Mapped[datetime] = mapped_column(UTCDateTime())
    timeout_s: Mapped[float] = mapped_column(Float)
    run_id: Mapped[str | None] = mapped_column(String(256), index=True)
    step: Mapped[int | None] = mapped_column(Integer)
    rubric_ref: Mapped[str | None] = mapped_column(String(300))
    plan: Mapped[BatchPlan] = mapped_column(BatchPlanJSON())
    idempotency_key: Mapped[str | None] = mapped_column(String(256), unique=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    api_key_id: Mapped[str | None] = mapped_column(String(32))
    n_samples: Mapped[int] = mapped_column(Integer)
    # The lease: which worker process scores the batch, until when (``storage.leases``).
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: When the sweeper last re-sent its task (None: only the API sent it, at created_at).
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    project: Mapped[str] = mapped_column(
        String(64), default="default", server_default="default", index=True
    )

    samples: Mapped[list[SampleRow]] = relationship(
        back_populates="batch", order_by="SampleRow.position"
    )


class SampleRow(Base):
    """One rollout of a batch, stored whole as escaped JSON."""

    __tablename__ = "samples"
    __table_args__ = (UniqueConstraint("batch_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    external_id: Mapped[str] = mapped_column(String(256))
    group_id: Mapped[str | None] = mapped_column(String(256))
    payload: Mapped[dict[str, Any]] = mapped_column(AsciiJSON())

    batch: Mapped[BatchRow] = relationship(back_populates="samples")


class ResultRow(Base):
    """The one result of one sample. The unique sample_id makes writes idempotent."""

    __tablename__ = "results"
    __table_args__ = (Index("ix_results_batch_position", "batch_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sample_id: Mapped[int] = mapped_column(
        ForeignKey("samples.id", ondelete="CASCADE"), unique=True
    )
    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    reward: Mapped[float | None] = mapped_column(Float)
    valid: Mapped[bool]
    failure_kind: Mapped[str | None] = mapped_column(String(32))
    failure_reason: Mapped[str | None] = mapped_column(Text)
    raw_reward: Mapped[float | None] = mapped_column(Float)
    penalty: Mapped[float] = mapped_column(Float, default=0.0)
    hack_score: Mapped[float] = mapped_column(Float, default=0.0)
    agreement: Mapped[float | None] = mapped_column(Float)
    components: Mapped[dict[str, float]] = mapped_column(AsciiJSON())
    judge_calls: Mapped[int] = mapped_column(Integer, default=0)
    cache_hits: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    verdicts: Mapped[list[VerdictRow]] = relationship(order_by="VerdictRow.position")
    findings: Mapped[list[FindingRow]] = relationship(order_by="FindingRow.id")


class VerdictRow(Base):
    """One judge's verdict on one sample (score, rationale, or error)."""

    __tablename__ = "judge_verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    judge: Mapped[str] = mapped_column(String(256), index=True)
    weight: Mapped[float] = mapped_column(Float)
    score: Mapped[float | None] = mapped_column(Float)
    rationale: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)


class FindingRow(Base):
    """One hindsight-audit finding on one sample."""

    __tablename__ = "findings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"), index=True)
    detector: Mapped[str] = mapped_column(String(128), index=True)
    kind: Mapped[str] = mapped_column(String(128))
    severity: Mapped[str] = mapped_column(String(16))
    confidence: Mapped[float] = mapped_column(Float)
    evidence: Mapped[str] = mapped_column(Text)
    basis: Mapped[str | None] = mapped_column(String(16), nullable=True)
    fact: Mapped[str | None] = mapped_column(Text, nullable=True)
    narration: Mapped[str | None] = mapped_column(Text, nullable=True)


class ApiKeyRow(Base):
    """An API key. Only its SHA-256 is stored; the key itself is shown once."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str | None] = mapped_column(String(256))
    role: Mapped[str] = mapped_column(String(16))
    #: The project the key sees and makes things in; ``*`` (admins only) for every project.
    project: Mapped[str] = mapped_column(String(64), default="default", server_default="default")
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class AuditRow(Base):
    """The audit log: who did what, when. Never updated, only appended."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(64), index=True)
    target: Mapped[str | None] = mapped_column(String(256))
    detail: Mapped[dict[str, Any] | None] = mapped_column(AsciiJSON())


class WebSessionRow(Base):
    """A signed-in review page: the cookie's SHA-256, never the cookie itself.

    Stored so that signing out (or revoking the key) ends the session on the server: a
    copied cookie is dead afterwards, on every API process."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    key_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("api_keys.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
