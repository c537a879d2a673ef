"""The pages' shell: Jinja2 templates rendered on the server, plain HTML forms, no JavaScript
build. Who is looking (a Bearer key, or a cookie session from signing in once), the sign-in
form for a visitor who may not see a page, and the checks every form post passes: same origin,
and a cookie session's CSRF token. Each feature's pages (``web_*.py``) are built on these.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

import jinja2
from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from judge_service.core.api.deps import SessionDep, presented_key
from judge_service.core.api.web.session import COOKIE, csrf_token, foreign_origin
from judge_service.core.projects import Scope, scope_of
from judge_service.core.storage import web_sessions
from judge_service.core.storage.keys import find_key
from judge_service.core.storage.tables import ApiKeyRow

REVIEWERS = ("reviewer", "admin")


@cache
def _templates() -> jinja2.Environment:
    """Templates from the installed package; HTML autoescaped (rollouts are untrusted text)."""
    loader = jinja2.PackageLoader("judge_service.core.api.web", "templates")
    return jinja2.Environment(loader=loader, autoescape=jinja2.select_autoescape(["html"]))


def render_text(name: str, **context: Any) -> str:
    """A page as text: the routes answer it, ``judge-service report`` writes it to a file."""
    return _templates().get_template(name).render(**context)


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(render_text(name, **context), status_code=status)


async def form_data(request: Request) -> dict[str, str]:
    """An urlencoded form body as a dict (no python-multipart needed for plain forms)."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}


FormDep = Annotated[dict[str, str], Depends(form_data)]


@dataclass(frozen=True)
class Viewer:
    key: ApiKeyRow | None
    cookie: str | None = None  # the session token when signed in by cookie
    problem: str | None = None

    @property
    def csrf(self) -> str:
        """The token the page's forms carry ("" for Bearer visitors, who need none)."""
        return csrf_token(self.cookie) if self.cookie else ""


def viewer(request: Request, session: SessionDep) -> Viewer:
    """Who is looking: a Bearer key if one is sent, else the cookie's live session."""
    bearer = presented_key(request)
    if bearer:
        row = find_key(session=session, key=bearer)
        return Viewer(row, problem=None if row else "That key is unknown or revoked.")
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        return Viewer(None)
    row = web_sessions.resolve(session=session, token=cookie)
    if row is None:
        return Viewer(None, problem="Your session ended or expired. Sign in again.")
    return Viewer(row, cookie)


class FormRefused(Exception):
    """A form post that must not act: from another origin, or without its CSRF token."""


def refused_form(exc: FormRefused) -> HTMLResponse:
    return render("refused.html", status=403, reason=str(exc))


def check_origin(request: Request) -> None:
    reason = foreign_origin(request)
    if reason is not None:
        raise FormRefused(reason)


def refusal(who: Viewer, *, next_path: str, status: int = 401) -> HTMLResponse | None:
    """The sign-in form for a visitor who may not see a page (None when they may): ``status``
    without a key, 403 for a key whose role may not review; signing in comes back here."""
    if who.key is None:
        return render("login.html", status=status, error=who.problem, next=next_path)
    if who.key.role not in REVIEWERS:
        message = f"A {who.key.role} key cannot review. Sign in with a reviewer or admin key."
        return render("login.html", status=403, error=message, next=next_path)
    return None


def back(**note: str) -> RedirectResponse:
    return RedirectResponse(f"/review?{urlencode(note)}", status_code=303)


def page_scope(key: ApiKeyRow) -> Scope:
    """The pages show only the signed-in key's project (every project for an all-projects
    admin; its rubrics are then ``default``'s)."""
    return scope_of(key.project)
