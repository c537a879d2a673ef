"""The FastAPI application, built by :func:`create_app` from a ``Settings``."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge_service.core.api.body import BodyGuard
from judge_service.core.api.deadline import RequestDeadline
from judge_service.core.api.docs import add_docs
from judge_service.core.api.error_docs import document_errors
from judge_service.core.api.headers import SecurityHeaders
from judge_service.core.api.key_cache import CheckedKeys
from judge_service.core.api.outage import database_error
from judge_service.core.api.params import plain_params
from judge_service.core.api.routes import health
from judge_service.core.api.shutdown import Shutdown
from judge_service.core.api.startup import DatabaseStartup
from judge_service.core.errors import JudgeServiceError
from judge_service.core.features import Feature, each, installed, load
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings, get_settings
from judge_service.core.worker.dispatch import Dispatcher, make_dispatcher

log = logging.getLogger(__name__)


def _field(loc: tuple) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) or "body"


async def _validation_error(
    request: Request, exc: RequestValidationError | ValidationError
) -> JSONResponse:
    """422 naming the fields. Also for a model a route builds from the client's input
    itself (``/get_reward`` maps its query onto a ``RewardRequest``): a 500 there would
    blame the service for what the client sent."""
    errors = [
        {
            "field": _field(tuple(e.get("loc", ()))),
            "message": e.get("msg", ""),
            "type": e.get("type"),
        }
        for e in exc.errors()
    ]
    if any(e["type"] == "json_invalid" for e in errors):
        body = {
            "error": {
                "code": "malformed_json",
                "message": "the body is not valid JSON",
                "detail": errors,
            }
        }
        return JSONResponse(body, status_code=400)
    fields = ", ".join(dict.fromkeys(e["field"] for e in errors))
    message = f"invalid request: {fields}: {errors[0]['message']}" if errors else "invalid request"
    body = {"error": {"code": "validation_error", "message": message, "detail": errors}}
    return JSONResponse(body, status_code=422)


async def _service_error(request: Request, exc: JudgeServiceError) -> JSONResponse:
    return JSONResponse(exc.to_json(), status_code=exc.status_code, headers=exc.headers())


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = {"error": {"code": code, "message": str(exc.detail), "detail": None}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    body = {"error": {"code": "internal_error", "message": "internal error", "detail": None}}
    return JSONResponse(body, status_code=500)


#: Container allocations (net of frees) between young-generation collections; Python's
#: default is 700.
GC_YOUNG_THRESHOLD = 20_000


def tune_garbage_collector() -> None:
    """Move everything allocated at start-up (litellm's price tables, the plugins) out of
    the garbage collector's reach: full collections then stop scanning millions of
    long-lived objects, which otherwise stalled requests for ~0.3 s every few batches.

    Young collections are made rarer too: scoring a GRPO step allocates a few objects
    per sample that reference counting frees at once, yet at the default threshold
    they set off about a dozen collections per step, ~2 ms of a 256-sample step on a
    2-core machine (``bench/grpo_wait.py``).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)


def create_app(
    settings: Settings,
    *,
    registry: Registry | None = None,
    dispatcher: Dispatcher | None = None,
    migrate: Callable[[], object] | None = None,
    features: Sequence[Feature] | None = None,
) -> FastAPI:
    """The service's ASGI app, made of the installed features (``core.features``). The
    dispatcher (in-process or Celery) starts with the app, after ``migrate`` (``serve``'s
    `db upgrade`); both wait for a database that is down."""
    plugins = registry or Registry()
    features = tuple(features or installed())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.dispatcher = dispatcher or make_dispatcher(settings, plugins)
        app.state.shutdown.dispatcher = app.state.dispatcher
        tune_garbage_collector()
        steps = [("the migration", migrate)] if migrate is not None else []
        startup = DatabaseStartup(
            settings.database_url, [*steps, ("the executor", app.state.dispatcher.start)]
        )
        app.state.startup = startup
        startup.run()
        for start in each("on_start", features):  # the local judge's build, in the background
            start(settings)
        try:
            yield
        finally:
            for stop in each("on_stop", features):
                stop(settings)
            startup.stop()
            app.state.dispatcher.close()

    app = FastAPI(
        title="judge-service",
        version="0.1.0",
        summary="Rewards for RL from LLM judge panels, rubrics and a hindsight hack audit.",
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc come from add_docs: offline, no CDN
        redoc_url=None,
        dependencies=[Depends(plain_params)],
        # The service exports Prometheus metrics (``/metrics``), not OpenTelemetry; FastAPI's
        # own telemetry would ask OpenTelemetry's three global providers on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    add_docs(app)
    app.state.settings = settings
    app.state.registry = plugins
    app.state.features = features
    app.state.checked_keys = CheckedKeys(settings.key_cache_s)  # read by ``api.deps``
    app.state.shutdown = Shutdown(settings.shutdown_grace_s)  # driven by ``api.server``
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(ValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(JudgeServiceError, _service_error)  # type: ignore[arg-type]
    app.add_exception_handler(SQLAlchemyError, database_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(
        BodyGuard, max_bytes=settings.max_body_bytes, timeout_s=settings.body_timeout_s
    )
    app.add_middleware(RequestDeadline, timeout_s=settings.request_timeout_s)
    app.add_middleware(SecurityHeaders)  # outermost: the guard's own answers get it too
    for setup in each("setup_app", features):  # what the routes find on the app
        setup(app, settings)
    # Routes are tried in this order, one by one, on every request: the hot paths first (a
    # GRPO step's rewards, an episode's steps).
    hot = [load(router) for feature in features for router in feature.hot_routers]
    rest = [load(router) for feature in features for router in feature.routers]
    routers = [health.router, *hot, *rest]
    for router in routers:
        app.include_router(router)
    document_errors(app, [app.router, *routers])
    return app


def app_from_environment() -> FastAPI:
    """The app with settings read from the environment now: the factory each process of
    ``judge-service serve --workers N`` calls (uvicorn imports it by name)."""
    return create_app(get_settings())
