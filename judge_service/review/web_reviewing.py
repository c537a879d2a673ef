"""What the review routes and the review page do, as plain functions on a session.

A decision is one transaction: the item's status, the decision row, its effect (the next
rubric version, a known-hack entry, a label) and the audit entry commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from judge_service.audit import store_known_hacks as known_hacks
from judge_service.core.errors import Conflict, NotFound, ValidationFailed
from judge_service.core.features import installed, load
from judge_service.core.projects import Scope
from judge_service.core.storage import audit
from judge_service.core.storage.tables import ApiKeyRow, BatchRow, SampleRow
from judge_service.review import store_review as review
from judge_service.review import wire as wire_review
from judge_service.review.decisions import DecisionError, next_criteria
from judge_service.review.tables import ReviewItemRow
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import store_labels as labels
from judge_service.scoring.store_rollouts import find_sample


def to_wire(row: ReviewItemRow) -> wire_review.ReviewItem:
    return wire_review.ReviewItem.model_validate(
        {
            **{c: getattr(row, c) for c in ("id", "kind", "status", "project", "rubric")},
            "run_id": row.run_id,
            **{c: getattr(row, c) for c in ("batch_id", "sample_id", "payload", "evidence")},
            **{c: getattr(row, c) for c in ("created_at", "decided_at", "decided_by")},
            "decisions": [
                {
                    c: getattr(d, c)
                    for c in ("decision", "reviewer", "at", "text", "weight", "note", "outcome")
                }
                for d in row.decisions
            ],
        }
    )


def decision_handler(kind: str) -> Callable[..., str | None] | None:
    """What applies a decision on an item of ``kind`` that another feature queued (its
    ``review_decisions``); None for the queue's own kinds."""
    for feature in installed():
        for named, target in feature.review_decisions:
            if named == kind:
                return load(target)
    return None


def get_item(*, session: Session, item_id: int, scope: Scope) -> ReviewItemRow:
    """The item; 404 when there is none, or it is of a project ``scope`` does not see."""
    row = review.get_item(session=session, item_id=item_id)
    if row is None or not scope.owns(row.project):
        raise NotFound(f"no review item {item_id}", detail={"id": item_id})
    return row


def _check(item: ReviewItemRow, body: wire_review.DecisionRequest) -> None:
    if item.status != review.PENDING:
        raise Conflict(
            f"review item {item.id} was already decided ({item.status} by {item.decided_by})",
            detail={"id": item.id, "status": item.status},
        )
    if body.decision == "edit":
        if item.kind != "rubric_item":
            raise ValidationFailed("only a rubric_item can be edited; approve or reject this one")
        if body.text is None and body.weight is None:
            raise ValidationFailed("an edit needs a new `text` or `weight`")
    if body.label is not None and item.sample_pk is None:
        raise ValidationFailed("`label` applies to items about one rollout")


def _approve_rubric_item(
    session: Session, item: ReviewItemRow, body: wire_review.DecisionRequest, key: ApiKeyRow
) -> str:
    """Write the next version of the item's rubric (of the item's project): the active
    criteria plus this one."""
    active = rubrics.get_version(session=session, name=item.rubric or "", project=item.project)
    if active is None:
        raise NotFound(f"rubric {item.rubric!r} no longer exists", detail={"id": item.id})
    try:
        criteria, _ = next_criteria(
            list(active.criteria),
            dict(item.payload.get("criterion") or {}),
            text=body.text if body.decision == "edit" else None,
            weight=body.weight if body.decision == "edit" else None,
        )
    except DecisionError as exc:
        raise ValidationFailed(str(exc), detail={"id": item.id}) from exc
    row = rubrics.write_version(
        session=session,
        name=active.name,
        description=active.description,
        criteria=criteria,
        prompts=dict(active.prompts or {}),
        penalty=active.penalty,
        created_by=key.id,
        source=f"review:{item.id}",
        project=item.project,
    )
    return row.ref


def _record_hack(
    session: Session, item: ReviewItemRow, body: wire_review.DecisionRequest, key: ApiKeyRow
) -> int:
    """A hack_finding decision: a confirmed hack joins the corpus; a rejection is a negative."""
    sample = session.get(SampleRow, item.sample_pk) if item.sample_pk is not None else None
    rollouts = item.evidence.get("rollouts") or [{}]
    row = known_hacks.add_known_hack(
        session=session,
        item_id=item.id,
        confirmed=body.decision == "approve",
        sample=sample.payload if sample is not None else rollouts[0],
        finding={**item.payload, "batch_id": item.batch_id, "sample_id": item.sample_id},
        hack_score=float(item.payload.get("hack_score") or 0.0),
        run_id=item.run_id,
        reviewer=key.id,
        note=body.note,
        project=item.project,
    )
    return row.id


def decide(
    *,
    session: Session,
    item_id: int,
    body: wire_review.DecisionRequest,
    key: ApiKeyRow,
    scope: Scope,
) -> wire_review.DecisionResult:
    """Apply a reviewer's decision and commit it with its effect and its audit entry; an
    item of a project ``scope`` does not see is a 404."""
    item = get_item(session=session, item_id=item_id, scope=scope)
    _check(item, body)
    if not review.claim_for_decision(
        session=session, item_id=item.id, decision=body.decision, reviewer=key.id
    ):
        session.rollback()
        raise Conflict(f"review item {item_id} was decided meanwhile", detail={"id": item_id})
    approve = body.decision in ("approve", "edit")
    ref = hack_id = family = None
    if item.kind == "rubric_item" and approve:
        ref = _approve_rubric_item(session, item, body, key)
    elif item.kind == "hack_finding":
        hack_id = _record_hack(session, item, body, key)
    elif (handle := decision_handler(item.kind)) is not None:  # a forge task family
        family = handle(session=session, payload=dict(item.payload), decision=body.decision)
    if body.label is not None:
        sample = session.get(SampleRow, item.sample_pk)
        if sample is not None:
            labels.set_label(session=session, sample=sample, label=body.label, reviewer=key.id)
    outcome = ref or (f"known_hack:{hack_id}" if hack_id is not None else family)
    review.add_decision(
        session=session,
        item_id=item.id,
        decision=body.decision,
        reviewer=key.id,
        text=body.text,
        weight=body.weight,
        note=body.note,
        outcome=outcome,
    )
    audit.record(
        session=session,
        actor=key.id,
        action=f"review.{body.decision}",
        target=f"review_item:{item.id}",
        detail={
            "kind": item.kind,
            "role": key.role,
            "rubric": ref,
            "known_hack": hack_id,
            "label": body.label,
            "note": body.note,
        },
    )
    session.commit()
    session.expire_all()
    return wire_review.DecisionResult(
        item=to_wire(get_item(session=session, item_id=item_id, scope=scope)),
        decision=body.decision,
        rubric=ref,
        known_hack_id=hack_id,
    )


def label(
    *, session: Session, body: wire_review.LabelRequest, key: ApiKeyRow, scope: Scope
) -> wire_review.LabelOut:
    """Record a reviewer's good/bad label of a scored rollout (replacing their earlier one);
    a rollout of a project ``scope`` does not see is a 404."""
    sample = find_sample(session=session, batch_id=body.batch_id, sample_id=body.sample_id)
    batch = session.get(BatchRow, body.batch_id) if sample is not None else None
    if sample is None or batch is None or not scope.owns(batch.project):
        raise NotFound(
            f"no sample {body.sample_id!r} in batch {body.batch_id!r}",
            detail={"batch_id": body.batch_id, "sample_id": body.sample_id},
        )
    row = labels.set_label(
        session=session, sample=sample, label=body.label, reviewer=key.id, note=body.note
    )
    audit.record(
        session=session,
        actor=key.id,
        action="label.set",
        target=f"sample:{body.batch_id}/{body.sample_id}",
        detail={"label": body.label},
    )
    session.commit()
    return wire_review.LabelOut(
        batch_id=row.batch_id,
        sample_id=row.sample_id,
        label=row.label,
        reviewer=row.reviewer,
        created_at=row.created_at,
    )
