"""Model endpoints are the operator's: a request names one, its key never leaves the settings.

Judges are reached on the fake OpenAI-compatible server, as a real server would be reached.
The secret test scores a batch through a keyed endpoint on both databases and both transports,
then reads every column of every table and every log line for the key.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import inspect, select, text
from sqlalchemy.orm import Session

from judge_service.core.api.app import create_app
from judge_service.core.errors import EndpointRefused
from judge_service.core.registry import Registry
from judge_service.core.settings import Settings, get_settings
from judge_service.core.storage.db import get_engine
from judge_service.core.storage.tables import BatchRow
from judge_service.judging.endpoints import FREE_ENDPOINT_KEY, resolve_spec
from judge_service.judging.providers import litellm_providers
from judge_service.scoring.web_batching import resolve_plan
from judge_service.wire import RewardRequest, spec_object
from tests.conftest import make_key
from tests.fakes import FakeOpenAIServer
from tests.helpers import Server, service_env

SECRET = "sk-test-SECRET-123"
SAMPLES = [
    {"id": "a", "prompt": "Summarise: the cat sat.", "completion": "A cat sat."},
    {"id": "b", "prompt": "Summarise: the dog ran.", "completion": "A dog ran."},
]
METADATA_URL = "http://169.254.169.254/latest/meta-data/"


def endpoints(fake: FakeOpenAIServer, **extra: Any) -> dict[str, Any]:
    """One keyed endpoint on the fake ("vllm-a"), serving ``openai/judge-*`` models only."""
    return {
        "vllm-a": {"base_url": fake.url, "api_key": SECRET, "models": ["openai/judge-*"]},
        "other": {"base_url": "http://127.0.0.1:9/v1", "models": ["*"]},
        **extra,
    }


def app_client(settings: Settings) -> TestClient:
    return TestClient(create_app(settings))


def trainer(settings: Settings) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key(settings.database_url, 'trainer')}"}


def post(client: TestClient, headers: dict[str, str], judges: list, **extra: Any):
    body = {"samples": SAMPLES, "judges": judges, **extra}
    return client.post("/v1/rewards", headers=headers, json=body)


def refused(response, field: str) -> dict:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "endpoint_not_allowed"
    assert error["detail"]["field"] == field
    assert field in error["message"]
    return error


def batch_count(settings: Settings) -> int:
    with Session(get_engine(settings.database_url)) as session:
        return len(session.scalars(select(BatchRow.id)).all())


def every_text(settings: Settings) -> str:
    """Every value of every column of every table, as text."""
    engine = get_engine(settings.database_url)
    parts: list[str] = []
    with engine.connect() as connection:
        for table in inspect(engine).get_table_names():
            for row in connection.execute(text(f'SELECT * FROM "{table}"')):
                parts.extend(str(value) for value in row)
    return "\n".join(parts)


# --- a named endpoint, end to end -------------------------------------------------------


@pytest.fixture
def keyed(settings_on_every_backend: Settings, fake: FakeOpenAIServer) -> Settings:
    """Both databases, both transports, free endpoints off, one keyed endpoint on the fake."""
    return settings_on_every_backend.model_copy(
        update={
            "endpoints": Settings(endpoints=endpoints(fake)).endpoints,
            "allow_free_endpoints": False,
        }
    )


def test_a_named_endpoint_scores_and_its_key_is_stored_nowhere(
    keyed: Settings, fake: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    headers = trainer(keyed)
    with app_client(keyed) as client:
        response = post(client, headers, [{"name": "openai/judge-a", "endpoint": "vllm-a"}])
        assert response.status_code == 200, response.text
        body = response.json()
        again = client.get(f"/v1/rewards/{body['batch_id']}", headers=headers).text
    assert [r["valid"] for r in body["results"]] == [True, True]
    assert fake.requests["judge-a"] == 2
    assert f"Bearer {SECRET}" in fake.authorizations  # the key did go to its server
    stored = every_text(keyed)
    assert '"endpoint": "vllm-a"' in stored or '"endpoint":"vllm-a"' in stored  # what it names
    assert SECRET not in stored
    assert SECRET not in caplog.text
    assert SECRET not in response.text + again


def test_an_api_base_of_a_configured_endpoint_is_stored_as_its_name(
    keyed: Settings, fake: FakeOpenAIServer
) -> None:
    with app_client(keyed) as client:
        response = post(client, trainer(keyed), [{"name": "openai/judge-b", "api_base": fake.url}])
    assert response.status_code == 200, response.text
    with Session(get_engine(keyed.database_url)) as session:
        (plan,) = session.scalars(select(BatchRow.plan)).all()
    options = plan.judges[0].options
    assert options["endpoint"] == "vllm-a" and "api_base" not in options
    assert f"Bearer {SECRET}" in fake.authorizations


# --- what is refused ----------------------------------------------------------------------


@pytest.fixture
def locked(migrated_sqlite_url: str, fake: FakeOpenAIServer) -> Settings:
    """Embedded, SQLite, free endpoints off (as with a broker), the fake as "vllm-a"."""
    return get_settings(
        database_url=migrated_sqlite_url,
        broker_url=None,
        cache_url=None,
        endpoints=endpoints(fake),
        allow_free_endpoints=False,
    )


@pytest.mark.parametrize("field", ["judges", "hindsight_judges"])
def test_a_foreign_api_base_is_422_naming_the_field_and_nothing_is_stored(
    locked: Settings, fake: FakeOpenAIServer, field: str
) -> None:
    spec = {"name": "openai/judge-a", "api_base": METADATA_URL}
    with app_client(locked) as client:
        headers = trainer(locked)
        if field == "judges":
            response = post(client, headers, [spec])
        else:
            response = post(client, headers, ["reference_match"], hindsight_judges=[spec])
    error = refused(response, f"{field}.0.api_base")
    assert error["detail"]["endpoints"] == ["other", "vllm-a"]
    assert "169.254" not in error["message"]  # nothing to probe with
    assert batch_count(locked) == 0
    assert fake.total_requests == 0


def test_an_unknown_endpoint_is_422_listing_the_valid_names(locked: Settings) -> None:
    with app_client(locked) as client:
        response = post(client, trainer(locked), [{"name": "openai/judge-a", "endpoint": "vllm-z"}])
    error = refused(response, "judges.0.endpoint")
    assert "vllm-z" in error["message"]
    assert "other, vllm-a" in error["message"]
    assert batch_count(locked) == 0


def test_a_model_the_endpoint_does_not_serve_is_422(locked: Settings) -> None:
    with app_client(locked) as client:
        response = post(client, trainer(locked), [{"name": "openai/gpt-4o", "endpoint": "vllm-a"}])
    error = refused(response, "judges.0.name")
    assert "openai/judge-*" in error["message"]


@pytest.mark.parametrize("free", [False, True])
def test_a_key_in_a_request_is_422_pointing_at_named_endpoints(
    locked: Settings, fake: FakeOpenAIServer, free: bool
) -> None:
    settings = locked.model_copy(update={"allow_free_endpoints": free})
    spec = {"name": "openai/judge-a", "api_base": fake.url, "api_key": SECRET}
    with app_client(settings) as client:
        response = post(client, trainer(settings), [spec])
    error = refused(response, "judges.0.api_key")
    assert "JS_ENDPOINTS" in error["message"]
    assert batch_count(settings) == 0
    assert SECRET not in every_text(settings)


def test_endpoint_and_api_base_together_are_422(locked: Settings, fake: FakeOpenAIServer) -> None:
    spec = {"name": "openai/judge-a", "endpoint": "vllm-a", "api_base": fake.url}
    with app_client(locked) as client:
        refused(post(client, trainer(locked), [spec]), "judges.0.api_base")


def test_the_local_judge_server_is_always_allowed(locked: Settings, fake: FakeOpenAIServer) -> None:
    """``JS_LOCAL_MODEL_URL`` is the service's own model: reachable with free endpoints off."""
    settings = locked.model_copy(update={"endpoints": {}, "local_model_url": fake.url})
    with app_client(settings) as client:
        response = post(client, trainer(settings), [{"name": "openai/any", "api_base": fake.url}])
    assert response.status_code == 200, response.text
    assert [r["valid"] for r in response.json()["results"]] == [True, True]


# --- free endpoints -----------------------------------------------------------------------


def test_free_endpoints_are_on_when_embedded_and_off_with_a_broker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JS_ALLOW_FREE_ENDPOINTS", raising=False)
    assert get_settings(broker_url=None).free_endpoints is True
    assert get_settings(broker_url="redis://127.0.0.1:6379/0").free_endpoints is False
    monkeypatch.setenv("JS_ALLOW_FREE_ENDPOINTS", "true")
    assert get_settings(broker_url="redis://127.0.0.1:6379/0").free_endpoints is True
    monkeypatch.setenv("JS_ALLOW_FREE_ENDPOINTS", "false")
    assert get_settings(broker_url=None).free_endpoints is False


@pytest.mark.parametrize(
    ("host", "free"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("127.0.0.2", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("gpu-box.internal", False),
        ("", False),
    ],
)
def test_free_endpoints_are_off_when_serve_listens_beyond_loopback(
    monkeypatch: pytest.MonkeyPatch, host: str, free: bool
) -> None:
    """Embedded, any trainer key could make the service call any address once ``serve``
    listens on the network: unless JS_ALLOW_FREE_ENDPOINTS says so, free endpoints are
    off there, as with a broker."""
    monkeypatch.delenv("JS_ALLOW_FREE_ENDPOINTS", raising=False)
    assert get_settings(broker_url=None).served_on(host).free_endpoints is free
    monkeypatch.setenv("JS_ALLOW_FREE_ENDPOINTS", "true")
    assert get_settings(broker_url=None).served_on(host).free_endpoints is True
    monkeypatch.setenv("JS_ALLOW_FREE_ENDPOINTS", "false")
    assert get_settings(broker_url=None).served_on(host).free_endpoints is False


def test_serve_on_every_interface_refuses_a_free_api_base(
    migrated_sqlite_url: str, tmp_path: Path
) -> None:
    """The real ``serve --host 0.0.0.0``, embedded: a request's own api_base is a 422, and
    the first log lines say why."""
    env = service_env(JS_DATABASE_URL=migrated_sqlite_url, JS_DETECTORS="none")
    server = Server(
        env=env, cwd=tmp_path, log=tmp_path / "serve.log", extra_args=["--host", "0.0.0.0"]
    )
    try:
        headers = {"Authorization": f"Bearer {make_key(migrated_sqlite_url, 'trainer')}"}
        judge = {"name": "openai/any", "api_base": METADATA_URL}
        body = {"samples": SAMPLES, "judges": [judge]}
        refused(
            httpx.post(f"{server.url}/v1/rewards", json=body, headers=headers), "judges.0.api_base"
        )
        assert "free endpoints: off" in server.log() and "JS_ALLOW_FREE_ENDPOINTS" in server.log()
    finally:
        server.kill()


def test_endpoints_are_read_from_json_and_their_keys_never_print(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = {"vllm-a": {"base_url": "http://gpu-1:8000/v1", "api_key": SECRET}}
    monkeypatch.setenv("JS_ENDPOINTS", json.dumps(config))
    settings = get_settings()
    assert settings.endpoints["vllm-a"].models == ["*"]
    assert settings.endpoints["vllm-a"].api_key.get_secret_value() == SECRET  # type: ignore[union-attr]
    assert SECRET not in repr(settings) + settings.model_dump_json()


def test_free_endpoints_get_a_placeholder_key_never_the_environments(
    migrated_sqlite_url: str, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedded by default: a request may name any api_base; the process's own
    ``OPENAI_API_KEY`` must not go to an address a client chose."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-SECRET-456")
    settings = get_settings(database_url=migrated_sqlite_url, broker_url=None, cache_url=None)
    assert settings.free_endpoints
    with app_client(settings) as client:
        response = post(client, trainer(settings), [{"name": "openai/free", "api_base": fake.url}])
    assert response.status_code == 200, response.text
    assert set(fake.authorizations) == {f"Bearer {FREE_ENDPOINT_KEY}"}


def test_a_worker_whose_settings_forbid_a_stored_api_base_refuses_it() -> None:
    """The worker checks again at call time: its settings, not the API's, decide."""
    spec = {"name": "openai/judge-a", "api_base": METADATA_URL}
    settings = get_settings(broker_url="redis://127.0.0.1:6379/0")
    with pytest.raises(EndpointRefused):
        resolve_spec(spec, settings=settings)
    gone = settings.model_copy(update={"endpoints": {}})
    with pytest.raises(EndpointRefused, match="unknown endpoint"):
        resolve_spec({"name": "openai/judge-a", "endpoint": "vllm-a"}, settings=gone)


@pytest.mark.parametrize(
    "judge",
    [
        "openai/gpt-4.1-mini",
        "anthropic/claude-3-5-haiku-latest",
        "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
        "together_ai/meta-llama/Llama-3-8b-chat-hf",
        "nano-gpt/some-model",  # one of litellm's JSON-configured providers
        "local/smollm2-135m",
        "reference_match",
        {"name": "openai/judge-a", "endpoint": "vllm-a"},
        {"name": "hosted_vllm/Qwen/Qwen2.5-7B-Instruct", "endpoint": "other"},
    ],
)
def test_litellm_providers_named_endpoints_and_the_builtin_judges_make_a_plan(
    locked: Settings, judge: Any
) -> None:
    """The provider check refuses only what litellm cannot call."""
    request = RewardRequest.model_validate({"samples": SAMPLES, "judges": [judge]})
    plan = resolve_plan(request, settings=locked, registry=Registry(), project="default")
    assert [entry.name for entry in plan.judges] == [spec_object(judge)["name"]]


def test_the_providers_are_litellms_own_list() -> None:
    """Read from the installed package without importing it, they are what litellm knows."""
    import litellm
    from litellm.llms.openai_like.json_loader import JSONProviderRegistry

    own = {getattr(p, "value", p) for p in litellm.provider_list}
    assert litellm_providers() == own | set(JSONProviderRegistry.list_providers())
