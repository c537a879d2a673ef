"""The review page (``/review``) and its forms: the pending items with their evidence, one item,
a decision, a label. The page shell (sign-in, templates, CSRF) is the core's
(:mod:`judge_service.core.api.web.pages`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from judge_service.core.api.deps import SessionDep
from judge_service.core.api.web.pages import (
    REVIEWERS,
    FormDep,
    FormRefused,
    back,
    check_origin,
    page_scope,
    refusal,
    refused_form,
    render,
    viewer,
)
from judge_service.core.api.web.session import csrf_ok
from judge_service.core.errors import Forbidden, JudgeServiceError, Unauthorized
from judge_service.core.storage.tables import ApiKeyRow
from judge_service.review import store_review as review
from judge_service.review import web_reviewing as reviewing
from judge_service.review import wire as wire_review
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import store_labels as labels
from judge_service.scoring.store_rollouts import recent_rollouts
from judge_service.wire import DbInt

router = APIRouter(include_in_schema=False)


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
