"""``POST /v1/rewards`` and ``GET /v1/rewards/{batch_id}``."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from judge_service import metrics, wire
from judge_service.api import batching
from judge_service.api.deps import AnyKey, TrainerKey
from judge_service.errors import Unavailable
from judge_service.storage import batches
from judge_service.storage.db import session_scope
from judge_service.storage.types import utcnow
from judge_service.worker.tasks import expire_batch

router = APIRouter(prefix="/v1", tags=["rewards"])

#: How long past a batch's deadline the API waits for the worker's own timeout masks.
DEADLINE_GRACE = timedelta(seconds=0.5)
ERRORS = {code: {"model": wire.ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 503)}


def _answer(response: wire.RewardResponse) -> JSONResponse:
    status = 200 if response.status == "done" else 202
    return JSONResponse(response.model_dump(mode="json"), status_code=status)


def _read(url: str, batch_id: str) -> wire.RewardResponse:
    with session_scope(url) as session:
        return batching.read_batch(session=session, batch_id=batch_id)


def _settle(url: str, batch_id: str) -> bool:
    """True when the batch is done, expiring it first if its deadline (plus grace) passed."""
    with session_scope(url) as session:
        batch = batches.get_batch(session=session, batch_id=batch_id)
        if batch is None or batch.status == "done":
            return True
        overdue = utcnow() >= batch.deadline_at + DEADLINE_GRACE
    return expire_batch(batch_id, database_url=url) if overdue else False


async def _wait(url: str, batch_id: str, deadline_at: datetime, dispatcher: object) -> None:
    """Wait until the batch is done; the deadline (plus grace) bounds the wait.

    The embedded executor signals the moment a batch is done; a Celery batch is
    polled, at most every 50 ms.
    """
    wait_done = getattr(dispatcher, "wait_done", None)
    if wait_done is not None:

        async def is_done() -> bool:
            return await run_in_threadpool(_settle, url, batch_id)

        left_s = max(0.0, (deadline_at + DEADLINE_GRACE - utcnow()).total_seconds())
        await wait_done(batch_id, left_s, is_done)
    delay = 0.005
    while not await run_in_threadpool(_settle, url, batch_id):
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 0.05)


async def submit_and_wait(body: wire.RewardRequest, *, state, key) -> wire.RewardResponse:
    """Validate, store, dispatch and (when ``wait``) wait: shared by every scoring route."""
    settings = state.settings
    batching.check_batch_size(body, settings=settings)
    batching.check_unique_ids(body)
    plan = await run_in_threadpool(
        batching.resolve_plan, body, settings=settings, registry=state.registry
    )

    def store() -> tuple[str, datetime, bool]:
        with session_scope(settings.database_url) as session:
            batch, created = batching.store_batch(
                body, session=session, plan=plan, settings=settings, key=key
            )
            return batch.id, batch.deadline_at, created

    batch_id, deadline_at, created = await run_in_threadpool(store)
    if created:
        metrics.BATCHES_ACCEPTED.inc()
        try:
            await run_in_threadpool(state.dispatcher.submit, batch_id)
        except Exception as exc:
            with session_scope(settings.database_url) as session:
                batching.discard_batch(session=session, batch_id=batch_id)
            raise Unavailable(f"the task queue is unavailable: {type(exc).__name__}") from exc
    if body.wait:
        await _wait(settings.database_url, batch_id, deadline_at, state.dispatcher)
    return await run_in_threadpool(_read, settings.database_url, batch_id)


@router.post(
    "/rewards",
    response_model=wire.RewardResponse,
    responses={202: {"model": wire.RewardResponse}, **ERRORS},
)
async def create_rewards(body: wire.RewardRequest, request: Request, key: TrainerKey):
    """Score a batch. 200 with results when done; 202 with ``batch_id`` when ``wait`` is false."""
    return _answer(await submit_and_wait(body, state=request.app.state, key=key))


@router.get("/rewards/{batch_id}", response_model=wire.RewardResponse, responses=ERRORS)
async def get_rewards(batch_id: str, request: Request, key: AnyKey):
    """Poll a batch: 200 with results once done, 202 while it is queued or running."""
    url = request.app.state.settings.database_url
    await run_in_threadpool(_settle, url, batch_id)
    return _answer(await run_in_threadpool(_read, url, batch_id))
