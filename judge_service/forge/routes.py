"""Signal manufacture: upload traces or documents (reviewer, admin), read jobs and tasks.

Uploads are JSONL bodies (``curl --data-binary @traces.jsonl``); options are query
parameters. The upload is checked whole before anything is stored: a bad line is a 422 that
names the line and the field, and a body over ``JS_MAX_BODY_MB`` a 413.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from judge_service.core import json_depth
from judge_service.core.api.deps import AnyKey, ReviewerKey, ScopeDep, SessionDep
from judge_service.core.api.enqueue import submit_or_undo
from judge_service.core.api.error_docs import errors
from judge_service.core.api.worker_gate import WorkerAlive
from judge_service.core.errors import NotFound, ValidationFailed
from judge_service.core.settings import Settings
from judge_service.core.storage import audit
from judge_service.forge import store as forge_store
from judge_service.forge import wire as forge_wire
from judge_service.forge.documents import parse_documents
from judge_service.forge.feature import FORGE_TASK
from judge_service.forge.tables import ForgeJobRow, ForgeTaskRow, TaskFamilyRow
from judge_service.judging.endpoints import check_spec, check_specs
from judge_service.traces.conversation import read_traces
from judge_service.traces.inputs import ForgeInputError
from judge_service.wire import DbInt

router = APIRouter(prefix="/v1", tags=["forge"])
SPEC_OPTIONS = ("miner", "generator", "solver", "verifiers")
LIST_OPTIONS = ("tools.writes", "tools.reads")
UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }
}


def _spec(value: str) -> Any:
    """A model spec from a query value: a JSON object, or a plain model string. The options
    model reads either as the object ``{"name": ..., <options>}`` (``wire.ModelSpec``); a
    value that starts like JSON but is none is a ``JSONDecodeError`` (a 422), not a name."""
    if value.lstrip().startswith("{"):
        return json_depth.loads(value)
    return value


def _specs(value: str) -> list[Any]:
    """Model specs from one ``verifiers`` value: a JSON list, a JSON object, or
    comma-separated model strings."""
    if value.lstrip().startswith("["):
        return list(json_depth.loads(value))
    if value.lstrip().startswith("{"):
        return [_spec(value)]
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_options(request: Request, model: type[BaseModel]) -> BaseModel:
    """The query parameters as ``model``; a bad or unknown option is a 422 naming it.
    ``project`` is no option: it is the caller's scope (``ScopeDep``)."""
    raw: dict[str, Any] = {}
    for name in request.query_params:
        if name == "project":
            continue
        values = request.query_params.getlist(name)
        try:
            if name in ("verifiers", "hindsight_judges"):  # repeated, a,b strings, or JSON
                raw[name] = [v for value in values for v in _specs(value)]
            elif name in LIST_OPTIONS:  # tools.writes=a,b (repeatable): a nested list
                group, key = name.split(".", 1)
                items = [v.strip() for value in values for v in value.split(",") if v.strip()]
                raw.setdefault(group, {})[key] = items
            else:
                raw[name] = _spec(values[-1]) if name in SPEC_OPTIONS else values[-1]
        except json_depth.TooDeep as exc:
            raise ValidationFailed(f"invalid option {name}: {exc}", detail={"field": name}) from exc
        except json.JSONDecodeError as exc:
            raise ValidationFailed(
                f"invalid option {name}: not valid JSON: {exc}", detail={"field": name}
            ) from exc
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "options"
        raise ValidationFailed(
            f"invalid option {field}: {error['msg']}", detail={"field": field}
        ) from exc


def input_error(exc: ForgeInputError) -> ValidationFailed:
    field = f" (field `{exc.field}`)" if exc.field and exc.line is not None else ""
    return ValidationFailed(f"{exc}{field}", detail=exc.detail())


def job_out(session: SessionDep, row: ForgeJobRow) -> forge_wire.ForgeJob:
    families = forge_store.job_families(session=session, job_id=row.id)
    return forge_wire.ForgeJob.model_validate(
        {
            **{c: getattr(row, c) for c in ("id", "kind", "status", "options", "created_at")},
            **{c: getattr(row, c) for c in ("finished_at", "error")},
            "counts": row.counts or {},
            "result": row.result or {},
            "families": [
                {
                    c: getattr(f, c)
                    for c in ("id", "name", "terms", "status", "tasks", "failed_traces")
                }
                for f in families
            ],
        }
    )


def checked_models(options: dict[str, Any], *, settings: Settings) -> dict[str, Any]:
    """The job's options with each model spec checked against the configured endpoints
    (422 naming the option), as the job stores them: never with a key."""
    checked = dict(options)
    for name in SPEC_OPTIONS:
        value = checked.get(name)
        if isinstance(value, list):
            checked[name] = check_specs(value, settings=settings, field=name)
        elif isinstance(value, dict):
            checked[name] = check_spec(value, settings=settings, field=name)
    return checked


async def _queue(
    request: Request,
    session: SessionDep,
    key: Any,
    kind: str,
    text: str,
    options: BaseModel,
    project: str,
) -> JSONResponse:
    stored = checked_models(
        options.model_dump(mode="json", exclude_none=True), settings=request.app.state.settings
    )
    job = forge_store.create_job(
        session=session,
        kind=kind,
        options=stored,
        inputs=text,
        created_by=key.id,
        project=project,
    )
    audit.record(session=session, actor=key.id, action=f"forge.{kind}", target=job.id)
    session.commit()

    def undo() -> None:
        forge_store.finish_job(
            session=session, job_id=job.id, counts={}, result={}, error="queue unavailable"
        )
        session.commit()

    submit_or_undo(partial(request.app.state.dispatcher.submit_task, FORGE_TASK, job.id), undo)
    return JSONResponse(job_out(session, job).model_dump(mode="json"), status_code=202)


async def _upload(request: Request, parse: Any) -> str:
    body = await request.body()
    try:
        await run_in_threadpool(parse, body)
    except ForgeInputError as exc:
        raise input_error(exc) from exc
    return body.decode("utf-8")


@router.post(
    "/forge/traces",
    response_model=forge_wire.ForgeJob,
    status_code=202,
    openapi_extra=UPLOAD_BODY,
)
async def forge_traces(
    request: Request, session: SessionDep, key: ReviewerKey, _alive: WorkerAlive, scope: ScopeDep
):
    """Queue a JSONL file of traces ``{"id", "messages", "tools"?, "metadata"?}``: one task
    per user goal, repeats merged, a reference end state per task, families, failure signs
    (precision against ``metadata.outcome``/``reward`` labels), failed traces mined for rubric
    items. Traces already forged in the project are skipped (``already_seen``). Options:
    ``rubric``, ``miner`` (also writes the goal lines), ``max_items``, ``tools.writes`` and
    ``tools.reads`` (tool names, comma-separated or repeated: override the read/write
    classes). A trace the forge cannot use (no user words, no assistant turn, only tool
    messages...) is set aside, and the job's ``result.set_aside`` lists it with the reason;
    the upload is refused only for a line that is no trace (not JSON, no or a repeated
    ``id``), or when every trace is set aside."""
    options = parse_options(request, forge_wire.TraceOptions)
    text = await _upload(request, read_traces)
    return await _queue(request, session, key, "traces", text, options, scope.home)


@router.post(
    "/forge/documents",
    response_model=forge_wire.ForgeJob,
    status_code=202,
    openapi_extra=UPLOAD_BODY,
)
async def forge_documents(
    request: Request, session: SessionDep, key: ReviewerKey, _alive: WorkerAlive, scope: ScopeDep
):
    """Queue a JSONL file of documents ``{"id", "text"}`` for grounded task synthesis.
    Options: ``generator``, ``verifiers`` (repeat or comma-separate), ``solver``,
    ``samples_per_task``, ``max_tasks``, ``min_pass``, ``max_pass``, ``chunk_chars``."""
    options = parse_options(request, forge_wire.DocumentOptions)
    text = await _upload(request, parse_documents)
    return await _queue(request, session, key, "documents", text, options, scope.home)


@router.get("/forge/jobs/{job_id}", response_model=forge_wire.ForgeJob, responses=errors(404))
def get_forge_job(job_id: str, session: SessionDep, key: AnyKey, scope: ScopeDep):
    """A forge job: status, counts, its families, and (traces) the mining it started."""
    row = forge_store.get_job(session=session, job_id=job_id)
    if row is None or not scope.owns(row.project):
        raise NotFound(f"no forge job {job_id!r}", detail={"id": job_id})
    return job_out(session, row)


def task_out(task: ForgeTaskRow, family: TaskFamilyRow) -> forge_wire.ForgeTask:
    return forge_wire.ForgeTask.model_validate(
        {
            **{
                c: getattr(task, c)
                for c in ("id", "job_id", "family_id", "kind", "prompt", "tools")
            },
            **{c: getattr(task, c) for c in ("reference", "source", "with_context")},
            **{c: getattr(task, c) for c in ("without_context", "duplicates", "failures")},
            **{c: getattr(task, c) for c in ("tier", "tier_run_id", "goal", "end_state")},
            **{c: getattr(task, c) for c in ("end_state_source", "needs_review")},
            "end_states": task.end_states or [],
            "family": family.name,
            "family_status": family.status,
        }
    )


@router.get("/tasks", response_model=forge_wire.ForgeTaskList)
def list_tasks(
    session: SessionDep,
    key: AnyKey,
    scope: ScopeDep,
    family: Annotated[str | None, Query(description="A family id or name")] = None,
    tier: forge_wire.Tier | None = None,
    approved: Annotated[bool | None, Query(description="true: approved families only")] = None,
    job_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    offset: Annotated[DbInt, Query()] = 0,
):
    """Forged tasks, filtered; ``approved=true`` is what ``forge export`` writes."""
    rows = forge_store.list_tasks(
        session=session,
        family=family,
        tier=tier,
        approved=approved,
        job_id=job_id,
        limit=limit,
        offset=offset,
        project=scope.see,
    )
    return forge_wire.ForgeTaskList(tasks=[task_out(t, f) for t, f in rows])


def _owned_task(session: SessionDep, task_id: str, scope: Any) -> tuple[ForgeTaskRow, Any]:
    found = forge_store.get_task(session=session, task_id=task_id)
    if found is None or not scope.owns(found[2]):
        raise NotFound(f"no task {task_id!r}", detail={"id": task_id})
    return found[0], found[1]


@router.get("/tasks/{task_id}", response_model=forge_wire.ForgeTask, responses=errors(404))
def get_task(task_id: str, session: SessionDep, key: AnyKey, scope: ScopeDep):
    """One forged task: for a trace task its goal, the reference end state and where it came
    from (``consensus``, ``single_trace``, ``review``, ``upload``), the candidate end states
    of its repeats, and the evidence (``source.evidence``: trace ids and turns)."""
    task, family = _owned_task(session, task_id, scope)
    return task_out(task, family)


@router.post(
    "/tasks/{task_id}/end_state",
    response_model=forge_wire.ForgeTask,
    responses=errors(404, 422),
)
def choose_end_state(
    task_id: str,
    choice: forge_wire.EndStateChoice,
    session: SessionDep,
    key: ReviewerKey,
    scope: ScopeDep,
):
    """Set a trace task's reference end state: ``{"choose": i}`` takes candidate ``i`` of
    ``end_states`` (source ``review``), ``{"end_state": {...}}`` takes the one given (source
    ``upload``). The task no longer needs review."""
    task, family = _owned_task(session, task_id, scope)
    if task.kind != "trace":
        raise ValidationFailed("only trace tasks have end states", detail={"field": "task_id"})
    if choice.choose is not None:
        candidates = task.end_states or []
        if choice.choose >= len(candidates):
            raise ValidationFailed(
                f"choose must be below {len(candidates)}, the number of candidate end states",
                detail={"field": "choose"},
            )
        state, source = candidates[choice.choose]["end_state"], "review"
    else:
        state, source = choice.end_state, "upload"
    forge_store.set_end_state(session=session, task=task, end_state=state, source=source)
    audit.record(
        session=session,
        actor=key.id,
        action="task.end_state",
        target=task.id,
        detail={"source": source, "choose": choice.choose, "note": choice.note},
    )
    session.commit()
    return task_out(task, family)
