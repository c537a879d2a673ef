"""The review page (``/review``): Jinja2, server-rendered, plain HTML forms, no JavaScript build.

Sign in with a key once and get a cookie session (a server-side session, see :mod:`.session`),
or send ``Authorization: Bearer`` on every request (answered 200, no redirect). Forms post back
and redirect to the page (POST-redirect-GET), with a note of what happened; a form from another
origin, or a cookie-signed form without its CSRF token, is refused with 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

import jinja2
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from judge_service.access import store_sessions as web_sessions
from judge_service.access.projects import Scope, scope_of
from judge_service.access.store_keys import find_key
from judge_service.access.web_session import COOKIE, csrf_ok, csrf_token, foreign_origin
from judge_service.api.deps import SessionDep, presented_key
from judge_service.errors import Forbidden, JudgeServiceError, Unauthorized
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import store_review as review
from judge_service.rubrics import web_reviewing as reviewing
from judge_service.rubrics import wire as wire_review
from judge_service.scoring.store_rollouts import recent_rollouts
from judge_service.storage import labels
from judge_service.storage.tables import ApiKeyRow
from judge_service.wire import DbInt

router = APIRouter(include_in_schema=False)
REVIEWERS = ("reviewer", "admin")


@cache
def _templates() -> jinja2.Environment:
    """Templates from the installed package; HTML autoescaped (rollouts are untrusted text)."""
    loader = jinja2.PackageLoader("judge_service.api.web", "templates")
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


def _guard(request: Request, session: SessionDep, form: dict[str, str]) -> ApiKeyRow:
    """The reviewer posting a form. Raises :class:`FormRefused` for a post from another
    origin, and for a cookie session's form without the session's CSRF field."""
    check_origin(request)
    who = viewer(request, session)
    if who.key is None:
        raise Unauthorized(who.problem or "sign in first")
    if who.cookie is not None and not csrf_ok(who.cookie, form.get("csrf")):
        raise FormRefused("the form's CSRF token is missing or stale; reload the page")
    if who.key.role not in REVIEWERS:
        raise Forbidden(f"a {who.key.role} key may not review")
    return who.key


@router.get("/review", response_class=HTMLResponse)
def review_page(
    request: Request,
    session: SessionDep,
    kind: str | None = None,
    run_id: str | None = None,
    msg: str | None = None,
    error: str | None = None,
) -> HTMLResponse:
    """The pending items with their evidence, the rubrics, recent rollouts to label."""
    who = viewer(request, session)
    refused = refusal(who, next_path="/review", status=200)
    if refused is not None:
        return refused
    kinds = ("rubric_item", "hack_finding", "disagreement", "task_family")
    assert who.key is not None
    scope = page_scope(who.key)
    items = review.list_items(
        session=session, kind=kind if kind in kinds else None, limit=50, project=scope.see
    )
    rollouts = recent_rollouts(session=session, run_id=run_id or None, limit=10, project=scope.see)
    return render(
        "review.html",
        key=who.key,
        csrf=who.csrf,
        items=[reviewing.to_wire(i) for i in items],
        kinds=kinds,
        kind=kind,
        run_id=run_id or "",
        rubrics=rubrics.list_rubrics(session=session, project=scope.home),
        rollouts=rollouts,
        label_counts=labels.labels_of(session=session, sample_pks=[r.sample_pk for r in rollouts]),
        decisions=review.recent_decisions(session=session, limit=10, project=scope.see),
        msg=msg,
        error=error,
    )


@router.get("/review/items/{item_id}", response_class=HTMLResponse)
def item_page(item_id: DbInt, request: Request, session: SessionDep) -> HTMLResponse:
    """One review item, pending or decided, with its evidence and decisions."""
    who = viewer(request, session)
    refused = refusal(who, next_path=f"/review/items/{item_id}")
    if refused is not None:
        return refused
    assert who.key is not None
    row = review.get_item(session=session, item_id=item_id)
    if row is None or not page_scope(who.key).owns(row.project):
        return render("missing.html", status=404, key=who.key, what=f"No review item {item_id}.")
    return render(
        "item.html",
        key=who.key,
        csrf=who.csrf,
        item=reviewing.to_wire(row),
    )


@router.post("/review/items/{item_id}/decision", response_class=HTMLResponse)
def decide_from_page(
    item_id: DbInt, request: Request, session: SessionDep, form: FormDep
) -> Response:
    try:
        key = _guard(request, session, form)
        body = wire_review.DecisionRequest.model_validate(
            {
                "decision": form.get("decision"),
                "text": form.get("text") or None,
                "weight": form.get("weight") or None,
                "note": form.get("note") or None,
                "label": form.get("label") or None,
            }
        )
        result = reviewing.decide(
            session=session, item_id=item_id, body=body, key=key, scope=page_scope(key)
        )
    except FormRefused as exc:
        return refused_form(exc)
    except ValidationError as exc:
        return back(error=f"Item {item_id}: {exc.errors()[0]['msg']}")
    except JudgeServiceError as exc:
        return back(error=f"Item {item_id}: {exc.message}")
    done = {"approve": "approved", "edit": "edited and approved", "reject": "rejected"}
    note = f"Item {item_id} {done[body.decision]}."
    if result.rubric:
        note += f" Rubric {result.rubric} written."
    if result.known_hack_id is not None:
        corpus = "known-hack corpus" if body.decision == "approve" else "negative examples"
        note += f" Rollout added to the {corpus}."
    return back(msg=note)


@router.post("/review/label", response_class=HTMLResponse)
def label_from_page(request: Request, session: SessionDep, form: FormDep) -> Response:
    try:
        key = _guard(request, session, form)
        body = wire_review.LabelRequest.model_validate(
            {k: form.get(k) for k in ("batch_id", "sample_id", "label")}
        )
        reviewing.label(session=session, body=body, key=key, scope=page_scope(key))
    except FormRefused as exc:
        return refused_form(exc)
    except ValidationError as exc:
        return back(error=f"Label: {exc.errors()[0]['msg']}")
    except JudgeServiceError as exc:
        return back(error=f"Label: {exc.message}")
    return back(msg=f"Labelled {body.sample_id} {body.label}.")
