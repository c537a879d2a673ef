"""Hostile input gets a 4xx naming the problem, never a 5xx: deep JSON, integers past the
database's range, validation errors a route finds itself. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from judge_service.core.api.app import create_app
from judge_service.core.json_depth import MAX_DEPTH
from judge_service.core.settings import get_settings
from judge_service.core.storage.db import session_scope
from judge_service.review.store_review import enqueue_item
from judge_service.wire import DB_INT_MAX
from tests.conftest import make_key

BIG = 2**63  # past PostgreSQL's BIGINT, as a fuzzer sends


#: Bodies sent as raw bytes must say they are JSON (anything else is a 415).
JSON = {"content-type": "application/json"}


def nested(depth: int, *, closed: bool = True) -> str:
    """``depth`` arrays inside each other around a 1, as JSON text."""
    return "[" * depth + "1" + ("]" * depth if closed else "")


@pytest.fixture
def api(database_url: str) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    """The embedded app on each real database, with a key per role."""
    settings = get_settings(database_url=database_url, broker_url=None, cache_url=None)
    keys = {
        role: {"Authorization": f"Bearer {make_key(database_url, role)}"}
        for role in ("trainer", "reviewer", "admin")
    }
    with TestClient(create_app(settings)) as client:
        yield client, keys


def error_code(response) -> str:
    return response.json()["error"]["code"]


@pytest.mark.parametrize("path", ["/v1/rewards", "/get_reward", "/v1/keys", "/v1/labels"])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 150, 1_000, 100_000])
def test_deep_json_is_400_with_or_without_a_key(client, keys, path, depth):
    for headers in (JSON, {**JSON, **keys["admin"]}):
        answer = client.post(path, content=nested(depth), headers=headers)
        assert answer.status_code == 400, (depth, answer.text)
        assert error_code(answer) == "json_too_deep"
        assert f"deeper than {MAX_DEPTH} levels" in answer.json()["error"]["message"]


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_json_that_is_also_invalid_is_400(client, keys, depth):
    """The fallback parser (``json``, for bodies pydantic-core refuses) hit RecursionError."""
    for body in (nested(depth, closed=False), nested(depth) + "x", "\ud800" + nested(depth)):
        answer = client.post(
            "/v1/rewards", content=body.encode("utf-8", "surrogatepass"), headers=JSON
        )
        assert answer.status_code == 400, answer.text
        assert error_code(answer) in ("json_too_deep", "invalid_encoding", "malformed_json")
    answer = client.post("/v1/rewards", content=nested(depth, closed=False), headers=JSON)
    assert error_code(answer) == "json_too_deep"


def test_json_at_the_depth_limit_passes_the_guard(client, keys):
    """64 levels reach validation (here: 422 for the unknown field), not a 400."""
    deep = {"role": "trainer", "x": json.loads(nested(MAX_DEPTH - 1))}
    answer = client.post("/v1/keys", json=deep, headers=keys["admin"])
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["detail"][0]["field"] == "x"


def test_deep_json_in_a_sample_is_400_and_nothing_is_stored(client, keys):
    metadata = json.loads(nested(MAX_DEPTH + 5))
    body = {"samples": [{"id": "a", "prompt": "p", "completion": "c", "metadata": {"m": metadata}}]}
    answer = client.post("/v1/rewards", json=body, headers=keys["trainer"])
    assert answer.status_code == 400 and error_code(answer) == "json_too_deep"
    assert client.get("/v1/review?status=any", headers=keys["admin"]).json()["items"] == []


def test_deep_json_in_forge_uploads_and_options_is_422(client, keys):
    line = '{"id": "t1", "messages": ' + nested(2_000) + "}\n"
    answer = client.post("/v1/forge/traces", content=line, headers=keys["reviewer"])
    assert answer.status_code == 422, answer.text
    assert "line 1" in answer.json()["error"]["message"]
    answer = client.post(
        "/v1/forge/documents",
        params={"generator": "{" * 5_000},
        content='{"id": "d", "text": "t"}\n',
        headers=keys["reviewer"],
    )
    assert answer.status_code in (400, 422), answer.text
    answer = client.post(
        "/v1/forge/documents",
        params={"verifiers": nested(5_000)},
        content='{"id": "d", "text": "t"}\n',
        headers=keys["reviewer"],
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["detail"] == {"field": "verifiers"}


def _item(url: str) -> int:
    with session_scope(url) as session:
        row = enqueue_item(
            session=session, kind="disagreement", dedupe_key="d1", payload={"x": 1}, evidence={}
        )
        session.commit()
        assert row is not None
        return row.id


def test_integers_past_the_database_range_are_422_on_every_database(api, database_url):
    client, keys = api
    item_id = _item(database_url)
    get = lambda path: client.get(path, headers=keys["admin"])  # noqa: E731
    assert get(f"/v1/review/{item_id}").status_code == 200
    assert get(f"/v1/review/{DB_INT_MAX}").status_code == 404  # in range, absent
    for path, field in [
        (f"/v1/review/{DB_INT_MAX + 1}", "path.item_id"),
        (f"/v1/review/{BIG}", "path.item_id"),
        ("/v1/review/-1", "path.item_id"),
        (f"/v1/review?offset={BIG}", "query.offset"),
        (f"/v1/review?offset={DB_INT_MAX + 1}", "query.offset"),
        (f"/v1/tasks?offset={BIG}", "query.offset"),
        (f"/v1/rubrics/helpfulness?version={BIG}", "query.version"),
        (f"/review/items/{BIG}", "path.item_id"),
    ]:
        answer = get(path)
        assert answer.status_code in (404, 422), (path, answer.text)
        if answer.status_code == 422:
            assert answer.json()["error"]["detail"][0]["field"] == field, path
    decision = client.post(
        f"/v1/review/{BIG}/decision", json={"decision": "reject"}, headers=keys["admin"]
    )
    assert decision.status_code == 422, decision.text
    assert get(f"/v1/review?offset={DB_INT_MAX}").json() == {"items": []}


def test_control_characters_in_paths_and_queries_are_422_on_every_database(api, database_url):
    """PostgreSQL cannot compare a text value holding NUL: these were 500s there."""
    client, keys = api
    batch = client.post(
        "/v1/rewards",
        json={"judges": ["reference_match"], "samples": [{"id": "s", "prompt": "p",
              "completion": "4", "reference": "4"}]},
        headers=keys["trainer"],
    ).json()["batch_id"]  # fmt: skip
    for path, field in [
        ("/v1/rewards/%00", "path.batch_id"),
        ("/v1/rewards/ab%00cd", "path.batch_id"),
        ("/v1/rewards/%1B%5B2J", "path.batch_id"),
        ("/v1/forge/jobs/%00", "path.job_id"),
        ("/v1/rubrics/%00", "path.name"),
        ("/v1/keys/%E2%80%AE%00", "path.key_id"),
        ("/v1/tasks?family=%00", "query.family"),
        ("/v1/tasks?approved=true&family=x%7F", "query.family"),
        ("/runs/%00", "path.run_id"),
        ("/v1/keys?project=%00", "query.project"),
    ]:
        method = client.delete if path.startswith("/v1/keys/") else client.get
        answer = method(path, headers=keys["admin"])
        assert answer.status_code == 422, (path, answer.text)
        assert answer.json()["error"]["detail"][0]["field"] == field, path
        assert field in answer.json()["error"]["message"], path
    for path in ("/v1/rewards/%E2%80%AE", "/v1/rewards/%F0%9F%A6%80", "/v1/forge/jobs/%C3%A9"):
        assert client.get(path, headers=keys["admin"]).status_code == 404, path  # odd, not bad
    kept = client.get(f"/v1/rewards/{batch}", headers=keys["trainer"])
    assert kept.status_code == 200 and kept.json()["results"][0]["reward"] == 1.0


@pytest.mark.parametrize(
    ("field", "value"), [("step", DB_INT_MAX + 1), ("step", BIG), ("quorum", BIG), ("step", -1)]
)
def test_body_integers_past_the_range_are_422_and_nothing_is_stored(api, field, value):
    client, keys = api
    body = {
        "samples": [{"id": "a", "prompt": "p", "completion": "c", "reference": "c"}],
        "judges": ["reference_match"],
        field: value,
    }
    answer = client.post("/v1/rewards", json=body, headers=keys["trainer"])
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["detail"][0]["field"] == field


def test_a_step_at_the_top_of_the_range_is_stored(api):
    client, keys = api
    body = {
        "samples": [{"id": "a", "prompt": "p", "completion": "c", "reference": "c"}],
        "judges": ["reference_match"],
        "step": DB_INT_MAX,
        "run_id": "edge",
    }
    answer = client.post("/v1/rewards", json=body, headers=keys["trainer"])
    assert answer.status_code == 200, answer.text
    assert answer.json()["step"] == DB_INT_MAX


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"run_id": ""}, "query.run_id"),
        ({"rubric": ""}, "query.rubric"),
        ({"run_id": "a\x01b"}, "query.run_id"),
        ({"judges": "x" * 300}, "judges.0."),
    ],
)
def test_get_reward_validation_errors_are_422_naming_the_field(client, keys, params, field):
    """OpenRLHF's request is mapped onto a RewardRequest: its errors were an uncaught 500."""
    answer = client.post(
        "/get_reward", params=params, json={"query": ["x"]}, headers=keys["trainer"]
    )
    assert answer.status_code == 422, answer.text
    assert error_code(answer) == "validation_error"
    fields = [e["field"] for e in answer.json()["error"]["detail"]]
    assert any(f.startswith(field) for f in fields), fields


def test_a_request_not_answered_in_time_gets_504(embedded_settings, fake):
    """JS_REQUEST_TIMEOUT_S bounds any answer: here a batch whose judge takes 5 s."""
    fake.configure("slow-judge", latency_s=5.0)
    settings = embedded_settings.model_copy(update={"request_timeout_s": 1.0})
    key = {"Authorization": f"Bearer {make_key(settings.database_url, 'trainer')}"}
    judge = {"name": "openai/slow-judge", "api_base": fake.url}
    body = {"samples": [{"id": "a", "prompt": "p", "completion": "c"}], "judges": [judge]}
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/rewards", json=body, headers=key)
        assert answer.status_code == 504, answer.text
        assert error_code(answer) == "answer_timeout"
        assert client.get("/healthz").status_code == 200


def test_openapi_lists_each_routes_errors_with_the_error_body(client):
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]

    def codes(path: str, method: str) -> set[str]:
        return {c for c in paths[path][method]["responses"] if c >= "400"}

    assert codes("/v1/keys", "post") == {"400", "401", "403", "408", "413", "415", "422", "503"}
    assert codes("/v1/rewards", "post") >= {"400", "401", "403", "409", "413", "415", "422", "503"}
    assert "415" in codes("/get_reward", "post")
    assert "415" not in codes("/v1/forge/traces", "post")  # JSONL upload, read line by line
    assert codes("/readyz", "get") == {"503"}  # not ready: the readiness body, not an error
    # 403: a key of one project naming another with ?project=
    assert codes("/v1/rewards/{batch_id}", "get") == {"401", "403", "404", "422", "503"}
    assert codes("/v1/rubrics", "get") == {"401", "403", "422", "503"}  # ?project=
    assert codes("/v1/review/{item_id}/decision", "post") >= {"403", "404", "409"}
    assert codes("/healthz", "get") == set()  # no key, no database, no parameters
    ref = {"$ref": "#/components/schemas/ErrorBody"}
    for path, operations in paths.items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                if code >= "400" and path != "/readyz":
                    assert response["content"]["application/json"]["schema"] == ref, (
                        path,
                        method,
                        code,
                    )
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    item_id = paths["/v1/review/{item_id}"]["get"]["parameters"][0]["schema"]
    assert item_id["maximum"] == DB_INT_MAX
