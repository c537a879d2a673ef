"""Open health endpoints: liveness, and readiness of the database, the broker and the workers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from judge_service.core.api.deps import AnyKey
from judge_service.core.api.state import ServiceState
from judge_service.core.features import load
from judge_service.core.storage.db import get_engine, schema_is_current
from judge_service.core.storage.outage import find_outage
from judge_service.core.storage.types import utcnow
from judge_service.core.worker.dispatch import Dispatcher

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


def _database_ready(url: str) -> str:
    try:
        with get_engine(url).connect() as connection:
            connection.execute(text("SELECT 1"))
        return (
            "ok"
            if schema_is_current(url)
            else "schema is not current: run `judge-service db upgrade`"
        )
    except Exception as exc:  # readiness reports the failure instead of raising it
        outage = find_outage(exc)
        return f"unreachable: {outage.reason if outage else type(exc).__name__}"


@router.get("/metrics", response_class=PlainTextResponse)
async def prometheus_metrics(key: AnyKey) -> PlainTextResponse:
    """Prometheus metrics of this process (batches, samples by outcome, judge verdicts).

    Like every endpoint but health and docs it needs a key (Prometheus sends one with
    ``authorization: {credentials: ...}`` in its scrape config).
    """
    return PlainTextResponse(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def _workers(dispatcher: Dispatcher) -> list[dict[str, Any]]:
    """The live workers from their heartbeats; empty when they can't be read."""
    try:
        seen = dispatcher.workers()
    except Exception:  # the database check above says why
        return []
    now = utcnow()
    return [
        {
            "id": worker.id,
            "hostname": worker.hostname,
            "pid": worker.pid,
            "busy": worker.busy,
            "seen_s_ago": round(max(0.0, (now - worker.seen_at).total_seconds()), 1),
            "up_s": round(max(0.0, (now - worker.started_at).total_seconds())),
        }
        for worker in seen
    ]


async def _workers_check(state: ServiceState) -> str:
    try:
        if await state.dispatcher.available():
            return "ok"
    except Exception as exc:  # readiness reports the failure instead of raising it
        return f"unknown: {type(exc).__name__}"
    return f"no worker heartbeat in the last {state.settings.worker_grace_s:g} s"


@router.get(
    "/readyz",
    responses={
        200: {"description": "Ready: every check is ok"},
        503: {"description": "Not ready: ``checks`` names what failed (same body as 200)"},
    },
)
async def readyz(request: Request) -> JSONResponse:
    """Ready when the database answers at the newest schema, the broker is reachable (and
    the service is not stopping) and a worker has sent a heartbeat within
    ``JS_WORKER_GRACE_S``; lists the live workers."""
    state = request.app.state
    queue = "ok" if await run_in_threadpool(state.dispatcher.ready) else "unreachable"
    checks = {
        "database": await run_in_threadpool(_database_ready, state.settings.database_url),
        # a stopping process takes no new work: a load balancer should send it elsewhere
        "queue": "shutting down" if state.shutdown.draining else queue,
        "workers": await _workers_check(state),
    }
    ready = all(value == "ok" for value in checks.values())
    body = {
        "status": "ready" if ready else "not ready",
        "checks": checks,
        "workers": await run_in_threadpool(_workers, state.dispatcher),
        # not checks: the features' status lines (the local judge's build: the
        # deterministic judges score while llama-server builds)
        **{
            key: load(function)(state.settings)
            for feature in state.features
            for key, function in feature.status
        },
    }
    return JSONResponse(body, status_code=200 if ready else 503)
