"""Open health endpoints: liveness, and readiness of the database and the broker."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from judge_service.api.deps import AnyKey
from judge_service.storage.db import get_engine, schema_is_current
from judge_service.storage.outage import find_outage

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


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready when the database answers at the newest schema and the broker is reachable."""
    state = request.app.state
    checks = {
        "database": await run_in_threadpool(_database_ready, state.settings.database_url),
        "queue": "ok" if await run_in_threadpool(state.dispatcher.ready) else "unreachable",
    }
    ready = all(value == "ok" for value in checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not ready", "checks": checks},
        status_code=200 if ready else 503,
    )
