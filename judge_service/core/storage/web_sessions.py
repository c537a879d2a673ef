"""Repository for the review page's sessions (``web_sessions``).

The cookie holds a random token; the table holds its SHA-256 (like API keys), the key it
stands for and when it ends. Signing out revokes the row, revoking the key ends all its
sessions (:func:`resolve` checks both), and every API process sees the same rows.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from judge_service.core.storage.tables import ApiKeyRow, WebSessionRow
from judge_service.core.storage.types import rows_changed, utcnow

#: Marks a cookie value as a session token (never an API key, which starts ``js_``).
PREFIX = "jss2."
#: How long a sign-in lasts without signing in again.
LIFETIME = timedelta(hours=12)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def open_session(*, session: Session, key: ApiKeyRow, now: datetime | None = None) -> str:
    """A new session for ``key``; the token is returned once and only its hash is stored.

    Rows that ended more than a lifetime ago are deleted on the way, so the table stays
    the size of the recent sign-ins over a week-long run."""
    at = now or utcnow()
    session.execute(delete(WebSessionRow).where(WebSessionRow.expires_at < at - LIFETIME))
    token = PREFIX + secrets.token_urlsafe(32)
    session.add(
        WebSessionRow(
            token_hash=token_hash(token), key_id=key.id, created_at=at, expires_at=at + LIFETIME
        )
    )
    session.flush()
    return token


def resolve(*, session: Session, token: str, now: datetime | None = None) -> ApiKeyRow | None:
    """The live key behind a session token; None when unknown, expired, signed out or the
    key was revoked."""
    if not token.startswith(PREFIX):
        return None
    row = session.get(WebSessionRow, token_hash(token))
    if row is None or row.revoked_at is not None or row.expires_at <= (now or utcnow()):
        return None
    key = session.get(ApiKeyRow, row.key_id)
    if key is None or key.revoked_at is not None:
        return None
    return key


def revoke(*, session: Session, token: str) -> bool:
    """End one session (signing out); True when a live one was ended."""
    result = session.execute(
        update(WebSessionRow)
        .where(WebSessionRow.token_hash == token_hash(token), WebSessionRow.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return bool(rows_changed(result))
