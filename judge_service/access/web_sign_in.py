"""Signing in to and out of the review and run pages: ``POST /review/login`` trades a reviewer
or admin key for a session cookie, ``POST /review/logout`` ends the session on the server.

Both take posts from this origin only: another site must neither sign a visitor in as
someone else nor sign them out.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from judge_service.core.api.deps import SessionDep
from judge_service.core.api.web.pages import (
    REVIEWERS,
    FormDep,
    FormRefused,
    back,
    check_origin,
    refused_form,
    render,
    viewer,
)
from judge_service.core.api.web.session import clear_cookie, csrf_ok, set_cookie
from judge_service.core.storage import audit, web_sessions
from judge_service.core.storage.keys import find_key

router = APIRouter(include_in_schema=False)


def _local(path: str | None) -> str | None:
    """A path on this site's pages to go back to after signing in (never another host)."""
    if path and path.startswith(("/review", "/runs")) and "//" not in path and "\\" not in path:
        return path
    return None


@router.post("/review/login", response_class=HTMLResponse)
def sign_in(session: SessionDep, request: Request, form: FormDep) -> Response:
    """Trade a reviewer or admin key for a session cookie (from this origin only: another
    site must not sign a visitor in as someone else)."""
    try:
        check_origin(request)
    except FormRefused as exc:
        return refused_form(exc)
    row = find_key(session=session, key=form.get("key", "").strip())
    back_to = _local(form.get("next"))
    if row is None:
        error = "That key is unknown or revoked."
        return render("login.html", status=401, error=error, next=back_to)
    if row.role not in REVIEWERS:
        message = f"A {row.role} key cannot review. Use a reviewer or admin key."
        return render("login.html", status=403, error=message, next=back_to)
    token = web_sessions.open_session(session=session, key=row)
    audit.record(session=session, actor=row.id, action="web.sign_in", target="review")
    session.commit()
    response: Response = (
        RedirectResponse(back_to, status_code=303)
        if back_to and back_to != "/review"
        else back(msg=f"Signed in as {row.name or row.id} ({row.role}).")
    )
    set_cookie(response, token, secure=request.url.scheme == "https")
    return response


@router.post("/review/logout", response_class=HTMLResponse)
def sign_out(request: Request, session: SessionDep, form: FormDep) -> Response:
    """End the session on the server (a copied cookie is dead from now on) and drop the cookie."""
    who = viewer(request, session)
    try:
        check_origin(request)
        if who.cookie is not None and not csrf_ok(who.cookie, form.get("csrf")):
            raise FormRefused("the form's CSRF token is missing or stale; reload the page")
    except FormRefused as exc:
        return refused_form(exc)
    if who.cookie is not None and who.key is not None:
        web_sessions.revoke(session=session, token=who.cookie)
        audit.record(session=session, actor=who.key.id, action="web.sign_out", target="review")
        session.commit()
    response = RedirectResponse("/review", status_code=303)
    clear_cookie(response, secure=request.url.scheme == "https")
    return response
