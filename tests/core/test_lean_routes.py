"""``api.lean``: a route bound by a plan answers every request as FastAPI's solver would,
and a signature the plan cannot bind fails when the route is built."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, StrictBool
from starlette.responses import JSONResponse

from judge_service.core.api.body import BodyGuard, ParsedBodyRoute
from judge_service.core.api.lean import LeanRoute
from judge_service.core.api.params import plain_params


class Move(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: dict
    end: StrictBool = False


async def role_of(request: Request) -> str:
    role = request.headers.get("x-role")
    if role is None:
        raise PermissionError  # answered 401 by the app's handler below
    return role


def caller_dependency():
    async def check(
        role: Annotated[str, Depends(role_of)], project: Annotated[str | None, Query()] = None
    ) -> tuple[str, str | None]:
        if role != "trainer":
            raise LookupError(role)  # answered 403
        return role, project

    async def lean(request: Request) -> tuple[str, str | None]:
        return await check(await role_of(request), request.query_params.get("project"))

    check.lean = lean  # type: ignore[attr-defined]
    return check


Caller = Annotated[tuple, Depends(caller_dependency())]


async def play(thing_id: str, body: Move, request: Request, caller: Caller):
    payload = {"id": thing_id, "body": body.model_dump(), "caller": list(caller)}
    return JSONResponse({**payload, "method": request.method})


def app_with(route_class: type) -> FastAPI:
    app = FastAPI(dependencies=[Depends(plain_params)])
    app.add_middleware(BodyGuard, max_bytes=10_000)

    async def unauthorized(request, exc):
        return JSONResponse({"error": "unauthorized"}, status_code=401)

    async def forbidden(request, exc):
        return JSONResponse({"error": f"forbidden: {exc}"}, status_code=403)

    app.add_exception_handler(PermissionError, unauthorized)
    app.add_exception_handler(LookupError, forbidden)
    router = APIRouter(prefix="/v1")
    router.add_api_route(
        "/things/{thing_id}/play", play, methods=["POST"], route_class_override=route_class
    )
    app.include_router(router)
    return app


REQUESTS = [
    ({"action": {"a": 1}}, {"x-role": "trainer"}, "t1", ""),
    ({"action": {"a": 1}, "end": True}, {"x-role": "trainer"}, "t1", "?project=p"),
    ({"action": {}}, {"x-role": "trainer"}, "t1", "?project=a&project=b"),
    ({}, {"x-role": "trainer"}, "t1", ""),
    ({"action": {}, "end": "yes"}, {"x-role": "trainer"}, "t1", ""),
    ({"action": {}, "ned": True}, {"x-role": "trainer"}, "t1", ""),
    ([1, 2], {"x-role": "trainer"}, "t1", ""),
    (None, {"x-role": "trainer"}, "t1", ""),
    ({"action": {}}, {}, "t1", ""),
    ({"action": {}}, {"x-role": "reviewer"}, "t1", ""),
    ({}, {"x-role": "reviewer"}, "t1", ""),
    ({"action": {}}, {"x-role": "trainer"}, "t%01", ""),
    ({"action": {}}, {"x-role": "trainer"}, "t1", "?project=%00"),
    ({"action": {}}, {"x-role": "trainer"}, "é✓", ""),
]


@pytest.mark.parametrize(("body", "headers", "thing", "query"), REQUESTS)
def test_a_lean_route_answers_as_fastapi_does(body, headers, thing, query):
    url = f"/v1/things/{thing}/play{query}"
    answers = []
    for route_class in (ParsedBodyRoute, LeanRoute):
        with TestClient(app_with(route_class)) as client:
            if body is None:
                response = client.post(url, headers=headers)
            else:
                response = client.post(url, json=body, headers=headers)
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1]
    assert answers[0][0] in (200, 401, 403, 422)


class Played(BaseModel):
    id: str
    done: bool
    reward: float | None = None
    observation: dict


async def play_answer(thing_id: str, body: Move):
    """An answer for the response model to check: an extra key, a default left out, and
    a wrong type when the action asks for one."""
    answer = {"id": thing_id, "done": body.end, "observation": body.action, "extra": 1}
    return {**answer, "reward": "not a number"} if body.action.get("bad") else answer


def app_answering(route_class: type) -> FastAPI:
    app = FastAPI(dependencies=[Depends(plain_params)])
    app.add_middleware(BodyGuard, max_bytes=10_000)
    app.router.add_api_route(
        "/things/{thing_id}/play",
        play_answer,
        methods=["POST"],
        response_model=Played,
        status_code=201,
        route_class_override=route_class,
    )
    return app


@pytest.mark.parametrize(
    "body", [{"action": {"a": "\u2713"}}, {"action": {}, "end": True}, {"action": {"bad": 1}}]
)
def test_a_lean_route_checks_its_answer_against_its_response_model_as_fastapi_does(body):
    """Its answer is the response model's: validated (a wrong one is a 500, not sent),
    extra keys left out, defaults filled in, with the route's status code."""
    answers = []
    for route_class in (ParsedBodyRoute, LeanRoute):
        with TestClient(app_answering(route_class), raise_server_exceptions=False) as client:
            response = client.post("/things/t1/play", json=body)
        answers.append(
            (
                response.status_code,
                response.text if response.status_code >= 500 else response.json(),
            )
        )
    assert answers[0] == answers[1]
    if "bad" in body["action"]:
        assert answers[1][0] == 500
    else:
        assert answers[1] == (
            201,
            {
                "id": "t1",
                "done": body.get("end", False),
                "reward": None,
                "observation": body["action"],
            },
        )


async def returns_a_response(thing_id: str):
    return JSONResponse({"unchecked": True})


def test_a_lean_route_with_a_response_model_may_not_answer_around_it():
    app = FastAPI()
    app.router.add_api_route(
        "/t/{thing_id}", returns_a_response, response_model=Played, route_class_override=LeanRoute
    )
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/t/x").status_code == 500


async def with_query(thing_id: str, limit: int = 3):
    return JSONResponse({})


async def with_int_path(thing_id: int):
    return JSONResponse({})


def sync_endpoint(thing_id: str):
    return JSONResponse({})


async def needs(x: int = 1) -> int:
    return x


async def with_dependency(thing_id: str, n: Annotated[int, Depends(needs)]):
    return JSONResponse({})


def test_the_plan_refuses_what_it_cannot_bind():
    for endpoint, why in (
        (with_query, "query_params"),
        (with_int_path, "str path parameters"),
        (sync_endpoint, "async"),
        (with_dependency, "cannot bind the dependency"),
    ):
        router = APIRouter()
        with pytest.raises(TypeError, match=why):
            router.add_api_route("/t/{thing_id}", endpoint, route_class_override=LeanRoute)
