"""Repository for API keys. Keys are random, so a SHA-256 is a safe one-way store."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge_service.storage.tables import ApiKeyRow


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


def key_projects(*, session: Session) -> list[str]:
    """The projects that live keys belong to (``*`` left out), in name order."""
    query = select(ApiKeyRow.project).where(
        ApiKeyRow.revoked_at.is_(None), ApiKeyRow.project != "*"
    )
    return sorted(set(session.scalars(query.distinct())))
