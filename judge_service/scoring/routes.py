"""``POST /v1/rewards`` and ``GET /v1/rewards/{batch_id}``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from judge_service import wire
from judge_service.core.api.body import ParsedBodyRoute
from judge_service.core.api.deps import AnyKey, ScopeDep, TrainerKey
from judge_service.core.api.error_docs import errors
from judge_service.core.api.worker_gate import WorkerAlive
from judge_service.scoring.web_submission import Answer, read, settle, submit_and_wait
from judge_service.scoring.world_verdicts import refuse_world_verdicts

router = APIRouter(prefix="/v1", tags=["rewards"], route_class=ParsedBodyRoute)

DETAIL_HELP = "`compact`: each result without its judges and components, as in the request"


def _answer(response: Answer, *, compact: bool) -> Response:
    """The response as JSON, serialised by pydantic-core straight to bytes (a GRPO step's
    256 results cost ~2 ms more through ``model_dump`` and ``json.dumps``)."""
    status = 200 if response.status == "done" else 202
    return Response(
        response.to_json(compact=compact), status_code=status, media_type="application/json"
    )


@router.post(
    "/rewards",
    response_model=wire.RewardResponse,
    responses={202: {"model": wire.RewardResponse}, **errors(409)},
)
async def create_rewards(
    body: wire.RewardRequest,
    request: Request,
    key: TrainerKey,
    _alive: WorkerAlive,
    scope: ScopeDep,
) -> Response:
    """Score a batch. 200 with results when done; 202 with ``batch_id`` when ``wait`` is false."""
    refuse_world_verdicts(body)  # only an episode of a world sets its end-state verdict
    answer = await submit_and_wait(body, state=request.app.state, key=key, scope=scope)
    return _answer(answer, compact=body.detail == "compact")


@router.get("/rewards/{batch_id}", response_model=wire.RewardResponse, responses=errors(404))
async def get_rewards(
    batch_id: str,
    request: Request,
    key: AnyKey,
    scope: ScopeDep,
    detail: Annotated[Literal["full", "compact"], Query(description=DETAIL_HELP)] = "full",
) -> Response:
    """Poll a batch: 200 with results once done, 202 while it is queued or running; 404 for
    a batch of another project."""
    url, compact = request.app.state.settings.database_url, detail == "compact"
    await run_in_threadpool(settle, url, batch_id, scope)
    answer = await run_in_threadpool(read, url, batch_id, scope, compact)
    return _answer(answer, compact=compact)
