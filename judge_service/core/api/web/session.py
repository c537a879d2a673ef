"""The review page's cookie session and the checks that keep it from being ridden.

The cookie (``js_session``) holds a random token stored server-side (see
:mod:`judge_service.core.storage.web_sessions`), so signing out kills it everywhere. It
authenticates the HTML pages and their forms only, never the JSON API (which takes Bearer
keys), and every state-changing form must pass two checks:

- the request comes from this origin (``Sec-Fetch-Site``, else ``Origin``). A page on
  another port of the same host is *same-site*, so ``SameSite=Strict`` alone still sends
  the cookie there; this check is what refuses it;
- the form carries the session's CSRF token, which a page elsewhere cannot read.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import Request
from starlette.responses import Response

from judge_service.core.storage.web_sessions import LIFETIME

COOKIE = "js_session"
#: ``Sec-Fetch-Site`` values of requests this site's own pages (or the user) started.
OWN_FETCH_SITES = frozenset({"same-origin", "none"})


def csrf_token(cookie: str) -> str:
    """The forms' anti-forgery field: an HMAC keyed by the session token, which is random,
    HttpOnly and unreadable from another origin (so nothing else needs storing)."""
    return hmac.new(cookie.encode("utf-8"), b"csrf", hashlib.sha256).hexdigest()[:32]


def csrf_ok(cookie: str, presented: str | None) -> bool:
    return bool(presented) and hmac.compare_digest(csrf_token(cookie), presented or "")


def foreign_origin(request: Request) -> str | None:
    """Why a form post comes from another origin, or None when it comes from this one.

    Browsers send ``Sec-Fetch-Site`` (Chromium, Firefox, Safari 16.4+); older ones still send
    ``Origin`` on POST. Clients that send neither (curl, scripts) are not browsers riding a
    cookie, and still need the CSRF token to use one."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        if fetch_site.lower() in OWN_FETCH_SITES:
            return None
        return f"the form was sent from another site (Sec-Fetch-Site: {fetch_site})"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    own = f"{request.url.scheme}://{request.url.netloc}"
    if origin.lower().rstrip("/") == own.lower():
        return None
    return f"the form was sent from another origin ({origin}, this site is {own})"


def set_cookie(response: Response, token: str, *, secure: bool) -> None:
    """``SameSite=Strict``: no other site's links or forms carry it; HttpOnly: no script."""
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(LIFETIME.total_seconds()),
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def clear_cookie(response: Response, *, secure: bool) -> None:
    response.delete_cookie(COOKIE, httponly=True, samesite="strict", secure=secure)
