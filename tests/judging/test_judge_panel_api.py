"""The judge panel through the API: faults from a fake OpenAI-compatible server, the cache,
deadlines, and the real local SmolLM2 judge with nothing configured. The embedded app runs on
both transports of OpenAI-compatible judges (``transport``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from judge_service.core.settings import Settings, get_settings
from tests.fakes import FakeOpenAIServer
from tests.helpers import Server, postgres_database, service_env
from tests.support_cli import run_in_process

SAMPLES = [
    {"id": "a", "prompt": "Summarise: the cat sat.", "completion": "A cat sat."},
    {"id": "b", "prompt": "Summarise: the dog ran.", "completion": "A dog ran."},
]

#: The batch deadline (``timeout_s``) of a panel with an ``always-500`` judge. Its retries
#: stop at the first backoff that would pass the deadline (1.75-3.5 s in) rather than after
#: the whole backoff (~4-7.5 s): a failed judge all the same (``judge_failed``, not a
#: ``timeout``), while the healthy judges answer in milliseconds, well within it.
FAILING_JUDGE_DEADLINE_S = 4


@pytest.fixture(scope="module")
def module_postgres_url(postgres_server: str, postgres_template: str) -> Iterator[str]:
    """One PostgreSQL database for the module (a copy of the session's migrated template),
    dropped at its end: a copy and a drop per test cost ~1 s. The tests share it safely:
    each posts its own batches (only an ``idempotency_key`` answers from an earlier batch,
    and the test that sends one makes it unique), and none counts what the database holds."""
    with postgres_database(postgres_server, "js_module_", postgres_template) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    """conftest's ``database_url`` (both real databases, at the newest schema), with the
    module's PostgreSQL database instead of one per test (SQLite copies cost nothing)."""
    if request.param == "sqlite":
        url = request.getfixturevalue("migrated_sqlite_url")
    else:
        url = request.getfixturevalue("module_postgres_url")
    return get_settings(database_url=url).database_url


@pytest.fixture
def fake_openai(fake: FakeOpenAIServer) -> FakeOpenAIServer:
    """One fake server for the module (``fake``: its behaviours and counters reset for each
    test) instead of a server started and stopped for each test."""
    return fake


@pytest.fixture
def embedded_settings(settings_on_every_backend: Settings) -> Settings:
    """Every test here runs on both databases and both transports: every fault on the lean
    transport and on litellm."""
    return settings_on_every_backend


def judge(fake: FakeOpenAIServer, model: str, **options: object) -> dict:
    return {"name": f"openai/{model}", "api_base": fake.url, **options}


def score(client, keys, judges: list, samples: list | None = None, **extra: object):
    response = client.post(
        "/v1/rewards",
        headers=keys["trainer"],
        json={"samples": samples or SAMPLES, "judges": judges, **extra},
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_one_broken_judge_of_three_is_listed_and_the_others_score(client, keys, fake_openai):
    body = score(
        client,
        keys,
        [
            judge(fake_openai, "judge-a"),
            judge(fake_openai, "judge-b"),
            judge(fake_openai, "always-500"),
        ],
        timeout_s=FAILING_JUDGE_DEADLINE_S,
    )
    for result in body["results"]:
        assert result["valid"] is True
        assert result["reward"] == pytest.approx(0.8)
        by_name = {j["judge"]: j for j in result["judges"]}
        assert by_name["openai/always-500"]["score"] is None
        assert by_name["openai/always-500"]["error"]
        assert by_name["openai/judge-a"]["score"] == pytest.approx(0.8)
        assert set(result["components"]) == {"judge/openai/judge-a", "judge/openai/judge-b"}


@pytest.mark.parametrize("models", [["always-500", "garbage"], ["prose", "prose-2"]])
def test_a_panel_that_all_fails_masks_the_sample(client, keys, fake_openai, models):
    fake_openai.configure("prose-2", fault="prose")
    judges = [judge(fake_openai, m, timeout_s=5) for m in models]
    body = score(client, keys, judges, timeout_s=FAILING_JUDGE_DEADLINE_S)
    for result in body["results"]:
        assert result["valid"] is False
        assert result["reward"] is None
        assert result["failure_kind"] == "judge_failed"
        assert all(j["error"] for j in result["judges"])


def test_below_quorum_is_masked(client, keys, fake_openai):
    judges = [
        judge(fake_openai, "judge-a"),
        judge(fake_openai, "always-500"),
        judge(fake_openai, "garbage"),
    ]
    body = score(client, keys, judges, quorum=2, timeout_s=FAILING_JUDGE_DEADLINE_S)
    assert {r["failure_kind"] for r in body["results"]} == {"below_quorum"}
    assert all(r["reward"] is None for r in body["results"])


def test_a_hanging_judge_is_cut_at_the_deadline(client, keys, fake_openai):
    deadline_s = 3  # waited out in full: short, with room for a busy machine after it
    started = time.monotonic()
    body = score(client, keys, [judge(fake_openai, "hang")], timeout_s=deadline_s)
    elapsed = time.monotonic() - started
    assert deadline_s - 0.3 <= elapsed < deadline_s + 2.5
    assert {r["failure_kind"] for r in body["results"]} == {"timeout"}
    assert all(r["reward"] is None and r["valid"] is False for r in body["results"])


def test_the_same_batch_twice_is_served_from_the_cache(client, keys, fake_openai):
    judges = [judge(fake_openai, "judge-a"), judge(fake_openai, "judge-b")]
    unique = [{**s, "completion": f"{s['completion']} {uuid.uuid4()}"} for s in SAMPLES]
    first = score(client, keys, judges, unique)
    calls = fake_openai.total_requests
    second = score(client, keys, judges, unique)
    assert fake_openai.total_requests == calls  # no new model calls
    assert first["usage"]["judge_calls"] == 4 and first["usage"]["cache_hits"] == 0
    assert second["usage"]["cache_hits"] == 4 and second["usage"]["judge_calls"] == 0
    assert [r["reward"] for r in second["results"]] == [r["reward"] for r in first["results"]]


def test_openai_judge_reaches_its_server_through_the_standard_environment(
    embedded_settings, keys, fake_openai, monkeypatch
):
    from fastapi.testclient import TestClient

    from judge_service.core.api.app import create_app

    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    with TestClient(create_app(embedded_settings)) as client:
        body = score(client, keys, ["openai/env-judge"])
    assert all(r["valid"] and r["reward"] == pytest.approx(0.8) for r in body["results"])
    assert fake_openai.requests["env-judge"] >= 2


def test_rate_limited_judge_is_retried_after_retry_after(client, keys, fake_openai):
    fake_openai.configure("judge-429", fault="429", times=1, retry_after=1)
    body = score(client, keys, [judge(fake_openai, "judge-429")])
    assert all(r["valid"] for r in body["results"])


def test_local_smollm2_judge_scores_with_nothing_configured(
    migrated_sqlite_url: str, tmp_path: Path
):
    """A fresh machine: no judges in the request, no JS_DEFAULT_JUDGES: the local model.
    (The database is a copy of the migrated template and the key is made in this process:
    ``db upgrade`` and ``keys create`` run as real processes in tests/service/test_cli.py.)"""
    env = service_env(JS_DATABASE_URL=migrated_sqlite_url)
    created = run_in_process("keys", "create", "--role", "trainer", env=env, cwd=tmp_path)
    key = created.strip().splitlines()[-1]
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        samples = [
            {
                "id": "good",
                "prompt": "What is the capital of France?",
                "completion": "The capital of France is Paris.",
                "reference": "Paris",
            },
            {
                "id": "bad",
                "prompt": "What is the capital of France?",
                "completion": "I like turtles.",
                "reference": "Paris",
            },
        ]
        response = httpx.post(
            f"{server.url}/v1/rewards",
            json={"samples": samples},
            headers={"Authorization": f"Bearer {key}"},
            timeout=300,
        )
        assert response.status_code == 200, response.text
        for result in response.json()["results"]:
            assert result["valid"] is True, result
            assert 0.0 <= result["reward"] <= 1.0
            (verdict,) = result["judges"]
            assert "smollm2" in verdict["judge"]
            assert verdict["error"] is None and isinstance(verdict["rationale"], str)
    finally:
        server.kill()


def test_relative_judge_scores_a_group_together_in_both_orders(client, keys, fake_openai):
    """A GRPO group goes to a relative judge as one call in order and one reversed."""
    fake_openai.configure("relative-judge", scores=[0.9, 0.5, 0.1])
    group = [
        {
            "id": f"g{i}",
            "group_id": "prompt-1",
            "prompt": "Summarise the memo.",
            "completion": f"Summary number {i} {uuid.uuid4()}",
        }
        for i in range(3)
    ]
    relative = judge(fake_openai, "relative-judge", relative=True)
    body = score(client, keys, [relative], samples=group)
    assert fake_openai.requests["relative-judge"] == 2  # not one call per sample
    rewards = [r["reward"] for r in body["results"]]
    # The fake answers 0.9, 0.5, 0.1 by position both times, so averaging the two orders
    # cancels its position bias: every response gets the same score.
    assert rewards == pytest.approx([0.5, 0.5, 0.5])
    assert all(r["valid"] for r in body["results"])


def test_a_repeated_idempotency_key_calls_no_judge_again(client, keys, fake_openai):
    """A retry of a scored batch is answered from it: its judges are not called again (a
    failing judge, so the judge cache can't be what spares the calls)."""
    body = {
        "samples": SAMPLES,
        "judges": [judge(fake_openai, "always-500", timeout_s=5)],
        "idempotency_key": f"retry-{uuid.uuid4().hex}",
        "timeout_s": FAILING_JUDGE_DEADLINE_S,
    }
    first = client.post("/v1/rewards", headers=keys["trainer"], json=body)
    assert first.status_code == 200, first.text
    calls = fake_openai.total_requests
    assert calls >= len(SAMPLES)
    again = client.post("/v1/rewards", headers=keys["trainer"], json=body)
    assert again.status_code == 200, again.text
    assert again.json()["batch_id"] == first.json()["batch_id"]
    assert again.json()["results"] == first.json()["results"]
    assert fake_openai.total_requests == calls
