"""What the rewards routes do, as plain functions: validate, store, read back.

The API never calls a model: it stores the batch, hands it to the dispatcher,
and reads results that workers wrote.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from judge_service import wire
from judge_service.audit.detectors import audit_plan
from judge_service.contracts import UsesLLM
from judge_service.core.batch_plan import BatchPlan
from judge_service.core.errors import (
    Conflict,
    DuplicateSampleIds,
    NotFound,
    RubricNotApplicable,
    ValidationFailed,
)
from judge_service.core.projects import Scope
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings
from judge_service.core.storage import audit
from judge_service.core.storage.db import session_scope
from judge_service.core.storage.tables import ApiKeyRow, BatchRow
from judge_service.domain import Rubric
from judge_service.judging.endpoints import check_specs, resolve_specs, strip_secrets
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.judging.panels import build_panel, default_panel, normalise_spec
from judge_service.scoring import store_batches as batches
from judge_service.scoring import web_answers as answers
from judge_service.scoring.store_plan import calibration_maps, resolve_rubric
from judge_service.scoring.store_results import load_outcomes


def request_hash(request: wire.RewardRequest) -> str:
    """Fingerprint of what decides the rewards (``wait``, ``timeout_s`` and ``detail`` left out)."""
    content = request.model_dump(mode="json", exclude={"wait", "timeout_s", "detail"})
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_batch_size(request: wire.RewardRequest, *, settings: Settings) -> None:
    if len(request.samples) > settings.max_batch_samples:
        raise ValidationFailed(
            f"samples: {len(request.samples)} samples, at most {settings.max_batch_samples} "
            "in one batch (JS_MAX_BATCH_SAMPLES); split the batch",
            detail={"field": "samples", "max": settings.max_batch_samples},
        )


def check_unique_ids(request: wire.RewardRequest) -> None:
    seen: set[str] = set()
    repeated: set[str] = set()
    for sample in request.samples:
        if sample.id in seen:
            repeated.add(sample.id)
        else:
            seen.add(sample.id)
    duplicates = sorted(repeated)
    if duplicates:
        raise DuplicateSampleIds(
            f"sample ids must be unique in a batch; repeated: {', '.join(duplicates[:10])}",
            detail={"field": "samples.id", "duplicates": duplicates[:100]},
        )


def plan_judges(request: wire.RewardRequest, *, settings: Settings) -> list[dict[str, Any]]:
    """The panel's specs as the plan stores them: a request's are checked against the
    configured endpoints (422 naming the field), the operator's default lose their keys."""
    if request.judges:
        raw = [s if isinstance(s, str) else s.model_dump(mode="json") for s in request.judges]
        return [normalise_spec(s) for s in check_specs(raw, settings=settings, field="judges")]
    return [normalise_spec(strip_secrets(s)) for s in default_panel(settings)]


def resolve_plan(
    request: wire.RewardRequest, *, settings: Settings, registry: Registry, project: str
) -> BatchPlan:
    """The plan to store with the batch: judges, aggregator, quorum, audit, rubric version
    and calibration maps; 422 on anything unknown. A rubric name and the calibration labels
    are ``project``'s."""
    rubric = (
        resolve_rubric(request.rubric, settings=settings, project=project)
        if request.rubric
        else None
    )
    specs = plan_judges(request, settings=settings)
    aggregator = request.aggregator or settings.default_aggregator
    panel = build_panel(
        resolve_specs(specs, settings=settings) or [],
        registry=registry,
        aggregator=aggregator,
        quorum=request.quorum,
        field="judges" if request.judges else "JS_DEFAULT_JUDGES",
    )
    hindsight = check_specs(
        [
            s if isinstance(s, str) else s.model_dump(mode="json")
            for s in request.hindsight_judges or []
        ],
        settings=settings,
        field="hindsight_judges",
    )
    if rubric is not None and not any(isinstance(m.judge, UsesLLM) for m in panel.members):
        raise rubric_not_applicable(rubric, specs, default=not request.judges)
    return BatchPlan(
        judges=specs,
        aggregator=aggregator,
        quorum=request.quorum,
        rubric=rubric,
        calibration=(
            calibration_maps([s["name"] for s in specs], settings=settings, project=project)
            if request.calibrate
            else None
        ),
        **audit_plan(
            request.detectors,
            hindsight or None,
            request.penalty or (rubric.penalty if rubric else None),
            settings=settings,
            registry=registry,
        ),
    )


def rubric_not_applicable(
    rubric: Rubric, specs: list[dict[str, Any]], *, default: bool
) -> RubricNotApplicable:
    """The 422 of a batch whose rubric no judge of the panel would ask. Only model judges
    (``uses_llm``) ask a rubric's criteria: scored as asked, the answer would name a rubric
    that added nothing. ``default``: the panel is ``JS_DEFAULT_JUDGES``, not the request's."""
    names = [spec["name"] for spec in specs]
    panel = "the default panel (JS_DEFAULT_JUDGES)" if default else "the panel"
    return RubricNotApplicable(
        f"rubric: {rubric.ref} cannot be applied: no judge of {panel} ({', '.join(names)}) "
        f"asks a rubric's criteria, only model judges do; add one to `judges` (such as "
        f"{LOCAL_JUDGE_NAME} or openai/gpt-4.1-mini), or leave out `rubric` (`penalty` sets "
        "a penalty policy on its own)",
        detail={"field": "rubric", "rubric": rubric.ref, "judges": names},
    )


def plan_reads_database(request: wire.RewardRequest) -> bool:
    """True when resolving the request's plan reads the database (a named rubric, or
    calibration maps); otherwise it is quick work that needs no thread."""
    return bool(request.rubric or request.calibrate)


def batch_timeout_s(request: wire.RewardRequest, *, settings: Settings) -> float:
    """The batch's deadline, in seconds from its creation."""
    return min(request.timeout_s or settings.default_timeout_s, settings.max_timeout_s)


def store_batch(
    request: wire.RewardRequest,
    *,
    session: Session,
    plan: BatchPlan,
    settings: Settings,
    key: ApiKeyRow,
    project: str,
) -> tuple[BatchRow, bool]:
    """Commit the batch and its samples (of ``project``) in one transaction; returns
    ``(batch, created)``.

    With an ``idempotency_key`` already used for the same request, the existing
    batch comes back and nothing is written; used for another request, 409.
    """
    fingerprint = request_hash(request)
    if request.idempotency_key:
        existing = batches.find_by_idempotency_key(session=session, key=request.idempotency_key)
        if existing is not None:
            return _same_request(existing, fingerprint, project), False
    batch_id = uuid.uuid4().hex
    try:
        batch = batches.create_batch(
            session=session,
            batch_id=batch_id,
            samples=SAMPLES_IN.dump_python(request.samples, mode="json"),
            plan=plan,
            request_hash=fingerprint,
            timeout_s=batch_timeout_s(request, settings=settings),
            run_id=request.run_id,
            step=request.step,
            rubric_ref=plan.rubric_ref,
            idempotency_key=request.idempotency_key,
            api_key_id=key.id,
            project=project,
        )
        audit.record(
            session=session,
            actor=key.id,
            action="batch.create",
            target=batch_id,
            detail={
                "samples": len(request.samples),
                "run_id": request.run_id,
                "project": project,
            },
        )
        session.commit()
    except IntegrityError:  # a concurrent request with the same idempotency key won the race
        session.rollback()
        existing = batches.find_by_idempotency_key(
            session=session, key=request.idempotency_key or ""
        )
        if existing is None:
            raise
        return _same_request(existing, fingerprint, project), False
    return batch, True


#: The samples' stored form in one pydantic-core pass (one ``model_dump`` per sample
#: costs twice as much, for every GRPO step).
SAMPLES_IN = TypeAdapter(list[wire.SampleIn])


def _same_request(existing: BatchRow, fingerprint: str, project: str) -> BatchRow:
    if existing.project != project:  # idempotency keys are one namespace: say nothing more
        raise Conflict(
            "this idempotency_key is already in use; choose another",
            detail={"field": "idempotency_key"},
        )
    if existing.request_hash != fingerprint:
        raise Conflict(
            "this idempotency_key was already used for a different request",
            detail={"field": "idempotency_key", "batch_id": existing.id},
        )
    return existing


def discard_batch(url: str, batch_id: str) -> None:
    """Remove a batch that could not be handed to a worker (the client gets a 503)."""
    with session_scope(url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        if batch is not None:
            for sample in batch.samples:
                session.delete(sample)
            session.delete(batch)


def read_batch(
    *, session: Session, batch_id: str, scope: Scope, compact: bool = False
) -> wire.RewardResponse | answers.DoneAnswer:
    """The batch as the API answers it; results only once it is done. A batch of another
    project is a 404, as if it did not exist. ``compact``: for a compact answer, whose
    results show no judges (their verdicts are not read)."""
    batch = batches.get_batch(session=session, batch_id=batch_id)
    if batch is None or not scope.owns(batch.project):
        raise NotFound(f"no batch {batch_id!r}", detail={"batch_id": batch_id})
    if batch.status != "done":
        scored = batches.count_results(session=session, batch_id=batch_id)
        return wire.RewardResponse(
            batch_id=batch.id,
            status=batch.status,
            rubric=batch.rubric_ref,
            run_id=batch.run_id,
            step=batch.step,
            progress=wire.Progress(scored=scored, total=batch.n_samples),
            warnings=batch.plan.warnings,
        )
    samples = batches.sample_keys(session=session, batch_id=batch_id)
    outcomes = load_outcomes(
        session=session,
        batch_id=batch_id,
        sample_ids={s.id: s.external_id for s in samples},
        verdicts=not compact,
    )
    return answers.done_response(
        batch_id=batch.id,
        rubric=batch.rubric_ref,
        run_id=batch.run_id,
        step=batch.step,
        outcomes=[o for _, o in outcomes],
        group_ids=[s.group_id for s in samples],
        warnings=batch.plan.warnings,
    )
