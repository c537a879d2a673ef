"""Signed session tokens for the review page's cookie (``js_session``).

Why not the key itself in the cookie: a cookie rides on every request and sits in the
browser's store; a token that expires, names only the key's id and cannot be turned back
into the key leaks much less. Why no separate server secret: the token is an HMAC keyed by
the SHA-256 of the API key, which the server stores and the browser never sees (whoever
holds the key could compute it, so a session never grants more than the key does). Revoking
the key ends its sessions; nothing new is stored, every API process and restart verifies
the same token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

from sqlalchemy.orm import Session

from judge_service.storage.keys import find_key
from judge_service.storage.tables import ApiKeyRow

COOKIE = "js_session"
PREFIX = "jss1"
LIFETIME_S = 12 * 3600


def _sign(key_hash: str, payload: str) -> str:
    digest = hmac.new(bytes.fromhex(key_hash), f"session:{payload}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def issue(key: ApiKeyRow, *, now: float | None = None) -> str:
    """A token for ``key`` valid for ``LIFETIME_S``."""
    expires = int((now or time.time()) + LIFETIME_S)
    payload = f"{key.id}.{expires}"
    return f"{PREFIX}.{payload}.{_sign(key.key_hash, payload)}"


def is_session_token(value: str) -> bool:
    return value.startswith(PREFIX + ".")


def resolve(*, session: Session, token: str, now: float | None = None) -> ApiKeyRow | None:
    """The live key a token was issued for; None when forged, expired or revoked."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != PREFIX or not parts[2].isdigit():
        return None
    _, key_id, expires, signature = parts
    if int(expires) < (now or time.time()):
        return None
    row = session.get(ApiKeyRow, key_id)
    if row is None or row.revoked_at is not None:
        return None
    if not hmac.compare_digest(signature, _sign(row.key_hash, f"{key_id}.{expires}")):
        return None
    return row


def lookup_key(*, session: Session, key: str) -> ApiKeyRow | None:
    """The key row for an API key or a session token."""
    if is_session_token(key):
        return resolve(session=session, token=key)
    return find_key(session=session, key=key)


def csrf_token(cookie: str) -> str:
    """The forms' anti-forgery field: derived from the cookie, which another site cannot read."""
    return hashlib.sha256(f"csrf:{cookie}".encode()).hexdigest()[:32]
