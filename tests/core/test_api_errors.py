"""Every bad input gets its 4xx and a JSON error; nothing stored is lost or changed."""

from __future__ import annotations

import json
import logging
import os

import pytest
from fastapi.testclient import TestClient

from judge_service.core.api.app import create_app
from judge_service.core.settings import Settings, get_settings
from tests.conftest import make_key


@pytest.fixture
def embedded_settings(settings_on_every_backend: Settings) -> Settings:
    """Every test here runs on both databases and both transports (the conftest's
    ``client`` and ``keys`` build on this)."""
    return settings_on_every_backend


GOOD = {
    "samples": [{"id": "a", "prompt": "2+2?", "completion": "4", "reference": "4"}],
    "judges": ["reference_match"],
}


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body["error"]


def fields(err: dict) -> set[str]:
    return {d["field"] for d in err["detail"]}


@pytest.fixture
def stored(client, keys):
    """A batch stored before the bad requests; afterwards it must read back whole."""
    body = client.post("/v1/rewards", json=GOOD, headers=keys["trainer"]).json()
    assert body["status"] == "done"
    yield body
    again = client.get(f"/v1/rewards/{body['batch_id']}", headers=keys["trainer"])
    assert again.status_code == 200
    assert again.json() == body


def raw(client, keys, content: bytes, content_type: str = "application/json"):
    headers = {**keys["trainer"], "content-type": content_type}
    return client.post("/v1/rewards", content=content, headers=headers)


def test_malformed_json_is_400(client, keys, stored):
    err = error(raw(client, keys, b'{"samples": [ '), 400, "malformed_json")
    assert "line" in err["detail"]


def test_invalid_utf8_is_400(client, keys, stored):
    body = json.dumps(GOOD).encode().replace(b'"4"', b'"\xff\xfe"', 1)
    error(raw(client, keys, body), 400, "invalid_encoding")


def test_lone_surrogate_escape_is_400(client, keys, stored):
    body = json.dumps(GOOD).replace('"completion": "4"', '"completion": "\\ud800"').encode()
    error(raw(client, keys, body), 400, "invalid_encoding")


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda b: b["samples"][0].pop("completion"), "samples.0.completion"),
        (lambda b: b["samples"][0].update(id=7), "samples.0.id"),
        (lambda b: b.update(samples="nope"), "samples"),
        (lambda b: b.update(samples=[]), "samples"),
        (lambda b: b.update(timeout_s=-1), "timeout_s"),
        (lambda b: b.update(wait="sometimes"), "wait"),
        (lambda b: b.update(rubirc="typo"), "rubirc"),
        (lambda b: b["samples"][0].update(id="bad\u0000id"), "samples.0.id"),
        (
            lambda b: b["samples"][0].update(completion=[{"role": "robot", "content": "hi"}]),
            "samples.0.completion",
        ),
    ],
)
def test_wrong_types_or_missing_fields_are_422_naming_the_field(
    client, keys, stored, mutate, field
):
    body = json.loads(json.dumps(GOOD))
    mutate(body)
    err = error(
        client.post("/v1/rewards", json=body, headers=keys["trainer"]), 422, "validation_error"
    )
    assert any(f == field or f.startswith(field + ".") for f in fields(err)), err
    assert field.split(".")[-1] in err["message"] or field in err["message"]


def test_body_that_is_not_an_object_is_422(client, keys, stored):
    error(raw(client, keys, b"[1, 2, 3]"), 422, "validation_error")


def test_duplicate_sample_ids_are_422(client, keys, stored):
    body = {**GOOD, "samples": GOOD["samples"] * 2}
    err = error(
        client.post("/v1/rewards", json=body, headers=keys["trainer"]), 422, "duplicate_sample_ids"
    )
    assert err["detail"]["duplicates"] == ["a"]


def test_unknown_judge_is_422_naming_it(client, keys, stored):
    body = {**GOOD, "judges": ["reference_match", "no_such_judge"]}
    err = error(
        client.post("/v1/rewards", json=body, headers=keys["trainer"]), 422, "unknown_judge"
    )
    assert "no_such_judge" in err["message"]
    assert err["detail"]["judge"] == "no_such_judge"
    # Like an unknown rubric's: the field, and the names that would have worked.
    assert err["detail"]["field"] == "judges.1" and "judges.1" in err["message"]
    known = err["detail"]["known"]
    assert {"reference_match", "regex_match", "local/smollm2-135m"} <= set(known)
    assert "no_such_judge" not in known and known == sorted(known)
    assert "reference_match" in err["message"].split("known judges:")[1]


@pytest.mark.parametrize("judge", ["foo/bar", {"name": "foo/bar", "weight": 2}])
def test_a_model_of_a_provider_litellm_does_not_know_is_422_naming_it(client, keys, stored, judge):
    """Not accepted and then every sample masked: litellm calls no ``foo/`` model."""
    body = {**GOOD, "judges": ["reference_match", judge]}
    err = error(
        client.post("/v1/rewards", json=body, headers=keys["trainer"]), 422, "unknown_judge"
    )
    assert err["detail"]["field"] == "judges.1" and err["detail"]["judge"] == "foo/bar"
    assert "judges.1" in err["message"] and "'foo'" in err["message"]


@pytest.mark.parametrize("judge", ["openai/", "hosted_vllm/ ", {"name": "anthropic/"}])
def test_a_model_string_with_no_model_after_its_provider_is_422_naming_it(
    client, keys, stored, judge
):
    """``openai/`` names a provider and no model: refused, not every sample masked."""
    body = {**GOOD, "judges": ["reference_match", judge]}
    err = error(
        client.post("/v1/rewards", json=body, headers=keys["trainer"]), 422, "unknown_judge"
    )
    assert err["detail"]["field"] == "judges.1"
    assert "judges.1" in err["message"] and "names no model after its provider" in err["message"]


def test_judge_with_bad_options_is_422(client, keys, stored):
    body = {**GOOD, "judges": [{"name": "regex_match", "pattern": "("}]}
    err = error(
        client.post("/v1/rewards", json=body, headers=keys["trainer"]), 422, "unknown_judge"
    )
    assert "regex_match" in err["message"]


def test_unknown_aggregator_is_422(client, keys, stored):
    body = {**GOOD, "aggregator": "geometric"}
    error(client.post("/v1/rewards", json=body, headers=keys["trainer"]), 422, "unknown_aggregator")


def test_no_key_is_401_and_a_bad_key_too(client, stored):
    error(client.post("/v1/rewards", json=GOOD), 401, "unauthorized")
    error(
        client.post("/v1/rewards", json=GOOD, headers={"Authorization": "Bearer js_nope"}),
        401,
        "unauthorized",
    )
    error(client.get(f"/v1/rewards/{stored['batch_id']}"), 401, "unauthorized")


def test_wrong_role_is_403(client, keys, stored):
    err = error(client.post("/v1/rewards", json=GOOD, headers=keys["reviewer"]), 403, "forbidden")
    assert err["detail"]["role"] == "reviewer"
    error(
        client.post("/v1/keys", json={"role": "admin"}, headers=keys["trainer"]), 403, "forbidden"
    )


def test_unknown_batch_is_404(client, keys, stored):
    error(client.get("/v1/rewards/doesnotexist", headers=keys["trainer"]), 404, "not_found")


def test_odd_unicode_round_trips(client, keys):
    odd = "é\u0000 \u202eRTL\u202c 🚀 \U0001f9ea ﷽ \ufeff"
    body = {
        "samples": [
            {
                "id": "u",
                "prompt": odd,
                "completion": odd + "\nThe answer is 4",
                "reference": "4",
                "metadata": {"note": odd},
            }
        ],
        "judges": ["reference_match"],
    }
    response = client.post("/v1/rewards", json=body, headers=keys["trainer"])
    assert response.status_code == 200, response.text
    assert response.json()["results"][0]["reward"] == 1.0


def test_health_and_docs_need_no_key(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok", "queue": "ok", "workers": "ok"}
    assert [w["pid"] for w in ready.json()["workers"]] == [os.getpid()]  # the embedded worker
    assert client.get("/docs").status_code == 200
    assert "/v1/rewards" in client.get("/openapi.json").json()["paths"]


def test_readyz_logs_nothing_of_alembic(client, caplog):
    """A probe every few seconds must not fill the log: the schema check reads the revision
    without alembic's "Context impl" and "Will assume" INFO lines."""
    with caplog.at_level(logging.INFO):
        for _ in range(2):
            assert client.get("/readyz").json()["checks"]["database"] == "ok"
    assert [r.getMessage() for r in caplog.records if r.name.startswith("alembic")] == []


def test_too_many_samples_is_422(migrated_sqlite_url):
    settings = get_settings(database_url=migrated_sqlite_url, max_batch_samples=2)
    headers = {"Authorization": f"Bearer {make_key(settings.database_url, 'trainer')}"}
    samples = [{**GOOD["samples"][0], "id": str(i)} for i in range(3)]
    with TestClient(create_app(settings)) as client:
        response = client.post("/v1/rewards", json={**GOOD, "samples": samples}, headers=headers)
        err = error(response, 422, "validation_error")
        assert err["detail"]["field"] == "samples"


def test_body_over_the_limit_is_413(migrated_sqlite_url):
    settings = get_settings(database_url=migrated_sqlite_url, max_body_mb=0.01)
    headers = {"Authorization": f"Bearer {make_key(settings.database_url, 'trainer')}"}
    big = {**GOOD, "samples": [{**GOOD["samples"][0], "completion": "x" * 20_000}]}
    with TestClient(create_app(settings)) as client:
        error(client.post("/v1/rewards", json=big, headers=headers), 413, "payload_too_large")

        def chunks():  # no Content-Length: the limit is enforced while streaming
            payload = json.dumps(big).encode()
            for start in range(0, len(payload), 4096):
                yield payload[start : start + 4096]

        error(
            client.post("/v1/rewards", content=chunks(), headers=headers), 413, "payload_too_large"
        )
        small = client.post("/v1/rewards", json=GOOD, headers=headers)
        assert small.status_code == 200


async def test_scoring_routes_validate_the_body_the_guard_parsed():
    """The guard's parse is handed on: the route's request never reads the body again."""
    from judge_service.core.api.body import PARSED_BODY, ParsedBodyRequest

    async def no_body():
        raise AssertionError("the body was read a second time")

    parsed = {"samples": [{"id": "a", "prompt": "p", "completion": "c"}]}
    scope = {"type": "http", "method": "POST", "path": "/v1/rewards", "headers": []}
    request = ParsedBodyRequest({**scope, PARSED_BODY: parsed}, no_body)
    assert await request.json() is parsed
