"""The append-only audit log."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import AuditRow


def record(
    *,
    session: Session,
    actor: str,
    action: str,
    target: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Append one entry; it is committed with the change it describes."""
    session.add(AuditRow(actor=actor, action=action, target=target, detail=detail))


def entries(*, session: Session, action: str | None = None, limit: int = 100) -> list[AuditRow]:
    query = select(AuditRow).order_by(AuditRow.id.desc()).limit(limit)
    if action is not None:
        query = query.where(AuditRow.action == action)
    return list(session.scalars(query))
