"""The error answers of each route in the OpenAPI document, with their body schema.

A route declares the errors only it can give (``responses=errors(404, 409)``). Those
that follow from how a route is built are added here, read from its dependencies and
parameters, so the document cannot drift from the code:

- 401 and 503 (the key, or the database, is read) for a route that needs a key or a
  database session; 403 when a role check wraps the key;
- 422 for a route with parameters or a body (``_validation_error`` in ``app``);
- 400, 408 and 413 for a route with a body (``api.body.BodyGuard``), and 415 for one
  whose body must be JSON (its path is under ``api.body.JSON_PATHS``).

Each is answered with :class:`judge_service.wire.ErrorBody`, also where FastAPI would
list its own validation-error schema, which this service never sends.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from judge_service import wire
from judge_service.core.api.body import JSON_PATHS, JSONL_PATHS
from judge_service.core.api.deps import current_key, get_session

DESCRIPTIONS = {
    400: "The body is not UTF-8 JSON, or nests deeper than 64 levels",
    401: "No API key, or an unknown or revoked one",
    403: "The key's role may not do this",
    404: "No such resource",
    408: "The body was not received within JS_BODY_TIMEOUT_S",
    409: "Conflicts with what is stored",
    413: "The body is larger than JS_MAX_BODY_MB",
    415: "The body is not declared JSON (content-type application/json or a +json type)",
    422: "Invalid parameters or body: wrong types, missing or unknown fields, out of range",
    503: "The database or the task queue is unavailable, or the service is stopping; retry",
}
SCHEMA_REF = {"$ref": "#/components/schemas/ErrorBody"}
BODY_METHODS = {"POST", "PUT", "PATCH"}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for the errors a route gives by itself (404, 409)."""
    return {code: {"model": wire.ErrorBody, "description": DESCRIPTIONS[code]} for code in codes}


def _calls(dependant: Dependant) -> Iterator[tuple[Any, Dependant]]:
    for sub in dependant.dependencies:
        yield sub.call, sub
        yield from _calls(sub)


def _has_params(dependant: Dependant) -> bool:
    own = (
        dependant.path_params,
        dependant.query_params,
        dependant.header_params,
        dependant.cookie_params,
        dependant.body_params,
    )
    return any(own) or any(_has_params(sub) for sub in dependant.dependencies)


def route_errors(route: APIRoute) -> set[int]:
    """The error statuses that ``route`` can answer because of how it is built."""
    codes: set[int] = set()
    calls = list(_calls(route.dependant))
    if any(call is current_key for call, _ in calls):
        codes |= {401, 503}
        if any(
            call is not current_key and any(c is current_key for c, _ in _calls(sub))
            for call, sub in calls
        ):
            codes.add(403)
    if any(call is get_session for call, _ in calls):
        codes.add(503)
    if _has_params(route.dependant):
        codes.add(422)
    if (route.methods or set()) & BODY_METHODS:
        codes |= {408, 413}
        if (
            route.body_field is not None
        ):  # JSON; uploads (openapi_extra) are JSONL, read line by line
            codes |= {400, 422}
            if route.path_format.startswith(JSON_PATHS) and route.path_format not in JSONL_PATHS:
                codes.add(415)
        elif route.openapi_extra:
            codes.add(422)
    return codes


def _add_errors(routes: list[APIRoute], schema: dict[str, Any]) -> None:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    if "ErrorBody" not in components:
        body = wire.ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(body.pop("$defs", {}))
        components["ErrorBody"] = body
    for route in routes:
        if not route.include_in_schema:
            continue
        for method in route.methods or ():
            operation = schema["paths"].get(route.path_format, {}).get(method.lower())
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            for code in sorted(route_errors(route)):
                responses[str(code)] = {
                    "description": DESCRIPTIONS[code],
                    "content": {"application/json": {"schema": SCHEMA_REF}},
                }
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)


def document_errors(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """Make ``app``'s OpenAPI document list the error answers of every route of
    ``routers`` (included in ``app`` as they are: their paths are the app's)."""
    routes = [r for router in routers for r in router.routes if isinstance(r, APIRoute)]
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _add_errors(routes, generate())
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
