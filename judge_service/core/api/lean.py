"""Hot routes whose arguments are bound by a plan made once, not solved on each request.

Why: FastAPI solves a route's dependencies anew on every request (their cache keys, their
parameters, the body's field), and on an episode step that was about a quarter of the
service's CPU (py-spy, ``bench/episodes.py``). A :class:`LeanRoute` keeps its endpoint's
FastAPI signature, so the OpenAPI schema, the docs and the documented errors are what they
were; at run time its arguments come from a plan read off FastAPI's own analysis of that
signature when the route is built. A route whose signature the plan cannot bind fails then,
at start-up, not on a request.

What a plan binds:

- the ``Request``;
- path parameters typed ``str`` (the router matched them already);
- one body parameter, a pydantic model, validated from the JSON that
  :class:`~judge_service.core.api.body.BodyGuard` parsed, with FastAPI's error locations;
- dependencies that are functions of the request alone (``plain_params``), or that carry a
  ``lean`` attribute: an equivalent function of the request (``deps.require_in_scope``).

Errors are raised in FastAPI's order, so the app's handlers answer them as before: the
app-wide parameter check, then the key (401/403), then the body (422).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, get_type_hints

from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.routing import APIRoute, _effective_route_context_var
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError
from starlette.requests import Request
from starlette.responses import Response

from judge_service.core.api.body import PARSED_BODY, ParsedBodyRoute
from judge_service.core.storage.types import ascii_json

Binder = Callable[[Request], Awaitable[Any]]


def _dependency_binder(dependant: Dependant) -> Binder:
    """The dependency as a function of the request: its ``lean`` twin, or itself when the
    request is all it takes."""
    call = dependant.call
    lean = getattr(call, "lean", None)
    if lean is not None:
        return lean
    takes_request_only = call is not None and list(inspect.signature(call).parameters) == [
        dependant.request_param_name
    ]
    if takes_request_only and inspect.iscoroutinefunction(call):
        return call
    raise TypeError(f"a lean route cannot bind the dependency {call!r}")


def _body_binder(model: type[BaseModel]) -> Callable[[Request], Any]:
    """The body validated as ``model``; a missing or invalid one raises FastAPI's error."""
    adapter = TypeAdapter(model)

    def bind(request: Request) -> Any:
        if PARSED_BODY not in request.scope:  # no JSON body came (the guard refused the rest)
            raise RequestValidationError(
                [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
            )
        try:
            return adapter.validate_python(request.scope[PARSED_BODY], from_attributes=True)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            raise RequestValidationError(
                [{**error, "loc": ("body", *error["loc"])} for error in errors]
            ) from None

    return bind


class Plan:
    """How one endpoint's arguments are bound: checks first, then each argument."""

    def __init__(self, dependant: Dependant, endpoint: Callable[..., Any]) -> None:
        unsupported = [
            kind
            for kind in ("query_params", "header_params", "cookie_params")
            if getattr(dependant, kind)
        ] + (["more than one body_params"] if len(dependant.body_params) > 1 else [])
        if unsupported:
            raise TypeError(f"a lean route cannot bind {endpoint.__name__}'s {unsupported}")
        hints = get_type_hints(endpoint)
        self.checks: list[Binder] = []  # dependencies the endpoint does not take (app-wide)
        self.bound: list[tuple[str, Binder]] = []
        for sub in dependant.dependencies:
            binder = _dependency_binder(sub)
            (self.bound.append((sub.name, binder)) if sub.name else self.checks.append(binder))
        self.paths = [field.name for field in dependant.path_params]
        for name in self.paths:
            if hints.get(name) is not str:
                raise TypeError(f"a lean route binds str path parameters, not {name}")
        self.body = [(f.name, _body_binder(hints[f.name])) for f in dependant.body_params]
        self.request = dependant.request_param_name
        wanted = set(inspect.signature(endpoint).parameters)
        given = {*(n for n, _ in self.bound), *self.paths, *(n for n, _ in self.body)}
        if wanted != given | ({self.request} if self.request else set()):
            raise TypeError(f"a lean route cannot bind all of {endpoint.__name__}'s {wanted}")

    async def arguments(self, request: Request) -> dict[str, Any]:
        for check in self.checks:
            await check(request)
        values: dict[str, Any] = {name: await bind(request) for name, bind in self.bound}
        for name in self.paths:
            values[name] = request.path_params[name]
        for name, bind in self.body:
            values[name] = bind(request)
        if self.request:
            values[self.request] = request
        return values


def _answer_writer(route: APIRoute) -> Callable[[Any], Response]:
    """How the route's answer is sent. With a ``response_model`` the endpoint returns its
    payload, which is validated against the model (a wrong one is FastAPI's
    ``ResponseValidationError``, a 500, never sent) and serialized by it, extra keys left
    out, as FastAPI does; pydantic-core does both, from one adapter made here. Without
    one, the endpoint returns a ``Response`` itself."""
    endpoint, model = route.endpoint.__name__, route.response_model
    if model is None:

        def send(answer: Any) -> Response:
            if not isinstance(answer, Response):
                raise TypeError(
                    f"the lean route {endpoint} has no response_model: return a Response"
                )
            return answer

        return send
    adapter, status = TypeAdapter(model), route.status_code or 200

    def write(answer: Any) -> Response:
        if isinstance(answer, Response):  # it would go out unchecked
            raise TypeError(f"the lean route {endpoint} returns a Response past its response_model")
        try:
            value = adapter.validate_python(answer, from_attributes=True)
        except ValidationError as exc:
            raise ResponseValidationError(exc.errors(include_url=False), body=answer) from None
        try:
            body = adapter.dump_json(value, by_alias=True)
        except PydanticSerializationError:  # a lone surrogate (a traced turn can hold one)
            body = ascii_json(adapter.dump_python(value, mode="json", by_alias=True)).encode()
        return Response(body, status_code=status, media_type="application/json")

    return write


class LeanRoute(ParsedBodyRoute):
    """An async route whose arguments are bound by a :class:`Plan` instead of FastAPI's
    dependency solver, and whose answer is checked against its ``response_model`` by
    :func:`_answer_writer` (or is a ``Response`` when it declares none)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        # A route included in a router or the app is built again for each inclusion, with
        # the dependencies it inherits (the app-wide ``plain_params``); FastAPI's own
        # ``APIRoute.get_route_handler`` reads them the same way.
        included = _effective_route_context_var.get()
        route = included if included is not None and included.original_route is self else self
        plan = Plan(route.dependant, self.endpoint)
        endpoint = self.endpoint
        if not inspect.iscoroutinefunction(endpoint):
            raise TypeError(f"a lean route's endpoint is async: {endpoint.__name__}")

        answer = _answer_writer(self)

        async def handle(request: Request) -> Response:
            return answer(await endpoint(**await plan.arguments(request)))

        return handle
