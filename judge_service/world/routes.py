"""Worlds from traces: build one from forge jobs (reviewer, admin), read its report.

A build is a background job, like a forge job: the route checks the forge jobs, stores the
world as ``queued``, dispatches ``WORLD_TASK`` and answers 202; the worker builds it.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from judge_service.core.api.deps import AnyKey, ReviewerKey, ScopeDep, SessionDep
from judge_service.core.api.enqueue import submit_or_undo
from judge_service.core.api.error_docs import errors
from judge_service.core.api.worker_gate import WorkerAlive
from judge_service.core.errors import NotFound, ValidationFailed
from judge_service.core.storage import audit
from judge_service.judging.endpoints import check_spec
from judge_service.wire import DbInt
from judge_service.world import store as world_store
from judge_service.world import wire as world_wire
from judge_service.world.feature import WORLD_TASK
from judge_service.world.tables import WorldRow

router = APIRouter(prefix="/v1", tags=["worlds"])


def summary_out(row: WorldRow) -> world_wire.WorldSummary:
    return world_wire.WorldSummary.model_validate(world_store.world_fields(row, report=False))


def detail_out(row: WorldRow) -> world_wire.WorldDetail:
    return world_wire.WorldDetail.model_validate(world_store.world_fields(row))


@router.post(
    "/worlds", response_model=world_wire.WorldSummary, status_code=202, responses=errors(422)
)
def build_world(
    body: world_wire.WorldBuild,
    request: Request,
    session: SessionDep,
    key: ReviewerKey,
    _alive: WorkerAlive,
    scope: ScopeDep,
):
    """Queue a world built from the traces of forge trace jobs (done, of the project): the
    entities and a model of each tool, one run of every goal with repeats held out to
    measure it. Poll ``GET /v1/worlds/{id}`` until ``status`` is ``done``."""
    jobs = list(dict.fromkeys(body.jobs))
    problems = world_store.job_problems(
        session=session, job_ids=jobs, project=scope.home, see=scope.see
    )
    if problems:
        raise ValidationFailed(
            f"jobs: {'; '.join(problems)}", detail={"field": "jobs", "problems": problems}
        )
    models = {}
    for field, given in (("simulator", body.simulator), ("user_model", body.user_model)):
        if given is not None:
            spec = given.model_dump(exclude_none=True)
            models[field] = check_spec(spec, settings=request.app.state.settings, field=field)
    row = world_store.create_world(
        session=session,
        name=body.name,
        jobs=jobs,
        project=scope.home,
        created_by=key.id,
        models=models,
    )
    audit.record(session=session, actor=key.id, action="world.build", target=row.id)
    session.commit()

    def undo() -> None:
        world_store.finish_world(session=session, world_id=row.id, error="queue unavailable")
        session.commit()

    submit_or_undo(partial(request.app.state.dispatcher.submit_task, WORLD_TASK, row.id), undo)
    return JSONResponse(summary_out(row).model_dump(mode="json"), status_code=202)


@router.get("/worlds", response_model=world_wire.WorldList)
def list_worlds(
    session: SessionDep,
    key: AnyKey,
    scope: ScopeDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[DbInt, Query()] = 0,
):
    """The project's worlds, newest first: status, jobs and counts (no report)."""
    rows = world_store.list_worlds(session=session, project=scope.see, limit=limit, offset=offset)
    return world_wire.WorldList(worlds=[summary_out(r) for r in rows])


@router.get("/worlds/{world_id}", response_model=world_wire.WorldDetail, responses=errors(404))
def get_world(world_id: str, session: SessionDep, key: AnyKey, scope: ScopeDep):
    """A world: status, counts, per tool the share of held-out calls each path answered and
    the transitions learned, and the fidelity on the held-out runs beside the exact-call
    replay baseline."""
    row = world_store.get_world(session=session, world_id=world_id)
    if row is None or not scope.owns(row.project):
        raise NotFound(f"no world {world_id!r}", detail={"id": world_id})
    return detail_out(row)
