"""Mining: queue mining of a run for new items of a rubric (reviewer), and read the job.

The routes keep their place under ``/v1/rubrics/{name}/mine``; the items they mine land in
the review queue. Rubric names are per project: every route works in the caller's project."""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from judge_service import wire
from judge_service.core.api.deps import AnyKey, ReviewerKey, ScopeDep, SessionDep
from judge_service.core.api.enqueue import submit_or_undo
from judge_service.core.api.error_docs import errors
from judge_service.core.api.worker_gate import WorkerAlive
from judge_service.core.errors import NotFound, ValidationFailed
from judge_service.core.settings import Settings
from judge_service.core.storage import audit
from judge_service.judging.endpoints import check_spec, model_or_default
from judge_service.judging.local_gate import require_local_model
from judge_service.judging.names import LOCAL_JUDGE_NAME
from judge_service.review import store_mining as mining
from judge_service.review import wire as wire_review
from judge_service.review.feature import MINE_TASK
from judge_service.review.tables import MiningJobRow
from judge_service.rubrics import store as rubrics
from judge_service.scoring.store_rollouts import run_exists
from judge_service.wire import spec_object

router = APIRouter(prefix="/v1", tags=["rubrics"])


def job_out(row: MiningJobRow) -> wire_review.MiningJob:
    return wire_review.MiningJob.model_validate(
        {
            **{c: getattr(row, c) for c in ("id", "rubric", "run_id", "status", "max_items")},
            **{c: getattr(row, c) for c in ("created_at", "finished_at", "error")},
            "result": row.result or {},
        }
    )


def _active(session: SessionDep, name: str, project: str) -> None:
    """404 unless the project has a rubric ``name``."""
    if rubrics.get_version(session=session, name=name, project=project) is None:
        raise NotFound(f"no rubric {name!r}", detail={"rubric": name})


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
