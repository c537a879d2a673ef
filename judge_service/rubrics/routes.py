"""Rubrics: create (admin), list and read versions (any key), and queue mining of a run.

Rubric names are per project: every route works in the caller's project (``scope.home``:
an all-projects admin names one with ``?project=``, else ``default``)."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from judge_service import wire
from judge_service.core.api.deps import AdminKey, AnyKey, ReviewerKey, ScopeDep, SessionDep
from judge_service.core.api.enqueue import submit_or_undo
from judge_service.core.api.error_docs import errors
from judge_service.core.api.local_gate import require_local_model
from judge_service.core.api.worker_gate import WorkerAlive
from judge_service.core.errors import Conflict, NotFound, ValidationFailed
from judge_service.core.settings import Settings
from judge_service.core.storage import audit
from judge_service.core.worker.task_names import MINE_TASK
from judge_service.judging.endpoints import check_spec, model_or_default
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.rubrics import store as rubrics
from judge_service.rubrics import store_mining as mining
from judge_service.rubrics import wire as wire_review
from judge_service.rubrics.tables import MiningJobRow, RubricVersionRow
from judge_service.scoring.store_rollouts import run_exists
from judge_service.wire import spec_object

router = APIRouter(prefix="/v1", tags=["rubrics"])


def rubric_out(row: RubricVersionRow, active: int | None) -> wire_review.RubricOut:
    return wire_review.RubricOut(
        name=row.name,
        version=row.version,
        ref=row.ref,
        active=row.version == active,
        status=row.status,
        description=row.description,
        criteria=[wire_review.CriterionOut.model_validate(c) for c in row.criteria],
        prompts=row.prompts or {},
        penalty=row.penalty,
        created_at=row.created_at,
        created_by=row.created_by,
        source=row.source,
    )


def job_out(row: MiningJobRow) -> wire_review.MiningJob:
    return wire_review.MiningJob.model_validate(
        {
            **{c: getattr(row, c) for c in ("id", "rubric", "run_id", "status", "max_items")},
            **{c: getattr(row, c) for c in ("created_at", "finished_at", "error")},
            "result": row.result or {},
        }
    )


def _active(session: SessionDep, name: str, project: str) -> RubricVersionRow:
    row = rubrics.get_version(session=session, name=name, project=project)
    if row is None:
        raise NotFound(f"no rubric {name!r}", detail={"rubric": name})
    return row


@router.post(
    "/rubrics", response_model=wire_review.RubricOut, status_code=201, responses=errors(409)
)
def create_rubric(
    body: wire_review.RubricCreate, session: SessionDep, key: AdminKey, scope: ScopeDep
):
    """Version 1 of a new rubric, approved and active at once; 409 if the name exists in
    the project."""
    if rubrics.exists(session=session, name=body.name, project=scope.home):
        raise Conflict(
            f"rubric {body.name!r} already exists; new versions come from review or import",
            detail={"rubric": body.name},
        )
    spec = body.model_dump(mode="json")
    row = rubrics.write_version(
        session=session,
        name=body.name,
        description=body.description,
        criteria=spec["criteria"],
        prompts=spec["prompts"],
        penalty=spec.get("penalty"),
        created_by=key.id,
        source="api",
        project=scope.home,
    )
    if row.version != 1:  # a concurrent create of the same name won the race
        session.rollback()
        raise Conflict(f"rubric {body.name!r} already exists", detail={"rubric": body.name})
    audit.record(
        session=session,
        actor=key.id,
        action="rubric.create",
        target=row.ref,
        detail={"project": scope.home},
    )
    session.commit()
    return rubric_out(row, row.version)


@router.get("/rubrics", response_model=wire_review.RubricList)
def list_rubrics(session: SessionDep, key: AnyKey, scope: ScopeDep):
    """Every rubric of the project with its active version."""
    return wire_review.RubricList(
        rubrics=[
            wire_review.RubricSummary(ref=f"{s.name}@{s.version}", **s.__dict__)
            for s in rubrics.list_rubrics(session=session, project=scope.home)
        ]
    )


@router.get("/rubrics/{name}", response_model=wire_review.RubricOut, responses=errors(404))
def get_rubric(
    name: str,
    session: SessionDep,
    key: AnyKey,
    scope: ScopeDep,
    version: Annotated[
        wire.DbInt | None, Query(ge=1, description="A version; default: active")
    ] = None,
):
    """The active version (latest approved), or version ``N`` with ``?version=N``."""
    active = _active(session, name, scope.home)
    row = (
        active
        if version is None
        else rubrics.get_version(session=session, name=name, version=version, project=scope.home)
    )
    if row is None:
        raise NotFound(
            f"rubric {name!r} has no version {version} (latest: {active.version})",
            detail={"rubric": name, "version": version, "active": active.version},
        )
    return rubric_out(row, active.version)


@router.get(
    "/rubrics/{name}/versions", response_model=wire_review.RubricVersions, responses=errors(404)
)
def list_versions(name: str, session: SessionDep, key: AnyKey, scope: ScopeDep):
    """Every version of a rubric, oldest first."""
    active = _active(session, name, scope.home)
    rows = rubrics.list_versions(session=session, name=name, project=scope.home)
    return wire_review.RubricVersions(versions=[rubric_out(r, active.version) for r in rows])


def _model_spec(model: wire.JudgeSpec | None, settings: Settings) -> dict | None:
    """The mining model as the job stores it: checked against the configured endpoints."""
    if model is None:
        return None
    spec = {"name": model} if isinstance(model, str) else model.model_dump(mode="json")
    spec.pop("weight", None)
    if "/" not in spec["name"]:
        raise ValidationFailed(
            f"model {spec['name']!r} is not a model: give a litellm model string such as "
            f"openai/gpt-4.1-mini, or {LOCAL_JUDGE_NAME}",
            detail={"field": "model"},
        )
    return check_spec(spec, settings=settings, field="model")


@router.post(
    "/rubrics/{name}/mine",
    response_model=wire_review.MiningJob,
    status_code=202,
    responses=errors(404),
)
def mine_rubric(
    name: str,
    body: wire_review.MineRequest,
    request: Request,
    session: SessionDep,
    key: ReviewerKey,
    _alive: WorkerAlive,
    scope: ScopeDep,
):
    """Queue mining of a run for new items of this rubric; they land in the review queue.
    The rubric and the run are the project's."""
    settings = request.app.state.settings
    _active(session, name, scope.home)
    if not run_exists(session=session, run_id=body.run_id, project=scope.home):
        raise NotFound(f"no batches of run {body.run_id!r}", detail={"run_id": body.run_id})
    model = _model_spec(body.model, settings)
    # the job's model, as it will run: a local judge still building is a 503 now, not a
    # job accepted that then fails
    runs_on = spec_object(model_or_default(model, settings))["name"]
    require_local_model([runs_on], settings, field="model")
    job = mining.create_job(
        session=session,
        rubric=name,
        run_id=body.run_id,
        model=model,
        max_items=body.max_items,
        created_by=key.id,
        project=scope.home,
    )
    audit.record(
        session=session,
        actor=key.id,
        action="rubric.mine",
        target=job.id,
        detail={"rubric": name, "run_id": body.run_id},
    )
    session.commit()

    def undo() -> None:
        mining.finish_job(session=session, job_id=job.id, result={}, error="queue unavailable")
        session.commit()

    submit_or_undo(partial(request.app.state.dispatcher.submit_task, MINE_TASK, job.id), undo)
    return JSONResponse(job_out(job).model_dump(mode="json"), status_code=202)


@router.get(
    "/rubrics/{name}/mine/{job_id}", response_model=wire_review.MiningJob, responses=errors(404)
)
def get_mining_job(name: str, job_id: str, session: SessionDep, key: AnyKey, scope: ScopeDep):
    """A mining job: ``queued``, ``running``, ``done`` (with the items it queued) or ``failed``."""
    job = mining.get_job(session=session, job_id=job_id)
    if job is None or job.rubric != name or not scope.owns(job.project):
        raise NotFound(f"no mining job {job_id!r} for rubric {name!r}", detail={"id": job_id})
    return job_out(job)
