"""The review queue: list items (any key), decide them and label rollouts (reviewer, admin)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from judge_service.core.api.deps import AnyKey, ReviewerKey, ScopeDep, SessionDep
from judge_service.core.api.error_docs import errors
from judge_service.review import store_review as review
from judge_service.review import web_reviewing as reviewing
from judge_service.review import wire as wire_review
from judge_service.wire import DbInt

router = APIRouter(prefix="/v1", tags=["review"])


@router.get("/review", response_model=wire_review.ReviewList)
def list_review_items(
    session: SessionDep,
    key: AnyKey,
    scope: ScopeDep,
    status: Annotated[wire_review.ReviewStatus | Literal["any"], Query()] = "pending",
    kind: wire_review.ReviewKind | None = None,
    rubric: str | None = None,
    run_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[DbInt, Query()] = 0,
):
    """Items most urgent first; ``status=any`` lists decided ones too."""
    rows = review.list_items(
        session=session,
        status=None if status == "any" else status,
        kind=kind,
        rubric=rubric,
        run_id=run_id,
        limit=limit,
        offset=offset,
        project=scope.see,
    )
    return wire_review.ReviewList(items=[reviewing.to_wire(r) for r in rows])


@router.get("/review/{item_id}", response_model=wire_review.ReviewItem, responses=errors(404))
def get_review_item(item_id: DbInt, session: SessionDep, key: AnyKey, scope: ScopeDep):
    """One item with its decision history."""
    return reviewing.to_wire(reviewing.get_item(session=session, item_id=item_id, scope=scope))


@router.post(
    "/review/{item_id}/decision",
    response_model=wire_review.DecisionResult,
    responses=errors(404, 409),
)
def decide_review_item(
    item_id: DbInt,
    body: wire_review.DecisionRequest,
    session: SessionDep,
    key: ReviewerKey,
    scope: ScopeDep,
):
    """Approve, edit (approve with changes) or reject. Approving a rubric item writes the
    rubric's next version; a hack finding joins the known-hack corpus (a rejection becomes
    a negative example). 409 if the item was already decided."""
    return reviewing.decide(session=session, item_id=item_id, body=body, key=key, scope=scope)


@router.post("/labels", response_model=wire_review.LabelOut, status_code=201, responses=errors(404))
def label_rollout(
    body: wire_review.LabelRequest, session: SessionDep, key: ReviewerKey, scope: ScopeDep
):
    """A reviewer's good/bad label of a scored rollout; labelling again replaces it."""
    return reviewing.label(session=session, body=body, key=key, scope=scope)
