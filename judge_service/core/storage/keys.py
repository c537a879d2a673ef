"""Repository for API keys. Keys are random, so a SHA-256 is a safe one-way store."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import ApiKeyRow
from judge_service.core.storage.types import utcnow


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(
    *, session: Session, role: str, name: str | None = None, project: str = "default"
) -> tuple[ApiKeyRow, str]:
    """A new key row and the plain key, which is never stored and shown only once."""
    key_id = secrets.token_hex(6)
    plain = f"js_{key_id}_{secrets.token_urlsafe(32)}"
    row = ApiKeyRow(id=key_id, name=name, role=role, project=project, key_hash=hash_key(plain))
    session.add(row)
    session.flush()
    return row, plain


def find_key(*, session: Session, key: str) -> ApiKeyRow | None:
    """The live key row matching ``key``, or None for unknown and revoked keys."""
    row = session.scalars(select(ApiKeyRow).where(ApiKeyRow.key_hash == hash_key(key))).first()
    if row is None or row.revoked_at is not None:
        return None
    return row


def any_key(*, session: Session) -> bool:
    """True once any key was made (revoked ones count): the database is no longer new."""
    return session.scalars(select(ApiKeyRow.id).limit(1)).first() is not None


def key_projects(*, session: Session) -> list[str]:
    """The projects that live keys belong to (``*`` left out), in name order."""
    query = select(ApiKeyRow.project).where(
        ApiKeyRow.revoked_at.is_(None), ApiKeyRow.project != "*"
    )
    return sorted(set(session.scalars(query.distinct())))


def revoke_key(*, session: Session, key_id: str) -> tuple[ApiKeyRow | None, bool]:
    """Revoke the key ``key_id``: the row (None when unknown) and whether this call revoked
    it. Revoking a revoked key changes nothing: it keeps its first ``revoked_at``."""
    row = session.get(ApiKeyRow, key_id)
    if row is None or row.revoked_at is not None:
        return row, False
    row.revoked_at = utcnow()
    session.flush()
    return row, True


def list_keys(*, session: Session, project: str | None = None) -> list[ApiKeyRow]:
    """Keys, oldest first: those of ``project`` (None: every project's, ``*`` included)."""
    query = select(ApiKeyRow).order_by(ApiKeyRow.created_at, ApiKeyRow.id)
    if project is not None:
        query = query.where(ApiKeyRow.project == project)
    return list(session.scalars(query))
