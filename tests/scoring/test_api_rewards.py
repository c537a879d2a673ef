"""POST/GET /v1/rewards on the embedded app (in-process executor), on SQLite and PostgreSQL and
on both transports of OpenAI-compatible judges."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from judge_service.core.settings import Settings


@pytest.fixture
def embedded_settings(settings_on_every_backend: Settings) -> Settings:
    """Every test here runs on both databases and both transports (the conftest's
    ``client`` and ``keys`` build on this)."""
    return settings_on_every_backend


REF = [{"name": "reference_match"}]


def sample(sid: str, completion: object, *, reference: str | None = "4", group: str | None = None):
    return {
        "id": sid,
        "prompt": "What is 2+2?",
        "completion": completion,
        "reference": reference,
        "group_id": group,
    }


def post(client: TestClient, headers: dict, **body: object):
    return client.post("/v1/rewards", json={"judges": ["reference_match"], **body}, headers=headers)


def test_rewards_come_back_in_sample_order_and_right_beats_wrong(client, keys):
    samples = [sample(f"s{i}", "The answer is 4" if i % 2 else "5", group="g") for i in range(12)]
    response = post(client, keys["trainer"], samples=samples)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "done"
    assert [r["id"] for r in body["results"]] == [s["id"] for s in samples]
    rewards = [r["reward"] for r in body["results"]]
    assert rewards == [1.0 if i % 2 else 0.0 for i in range(12)]
    assert all(r["valid"] for r in body["results"])
    assert body["groups"]["g"] == {"reward_std": 0.5, "has_advantage": True}
    first = body["results"][1]
    assert first["components"] == {"judge/reference_match": 1.0}
    assert first["judges"][0]["judge"] == "reference_match"


def test_chat_sample_scores_like_its_text_twin(client, keys):
    chat = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "calc", "arguments": '{"x": "2+2"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "assistant", "content": "The answer is 4"},
    ]
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    body = post(
        client,
        keys["trainer"],
        samples=[
            sample("text", "The answer is 4"),
            {"id": "chat", "prompt": prompt, "completion": chat, "reference": "4"},
        ],
    ).json()
    text, chat_result = body["results"]
    assert chat_result["valid"] and text["valid"]
    assert chat_result["reward"] == text["reward"] == 1.0


def test_bad_sample_is_masked_alone(client, keys):
    body = post(
        client,
        keys["trainer"],
        samples=[
            sample("ok", "4"),
            sample("empty", "   "),
            sample("noref", "4", reference=None),
        ],
    ).json()
    ok, empty, noref = body["results"]
    assert ok["valid"] and ok["reward"] == 1.0
    for masked in (empty, noref):
        assert masked["valid"] is False
        assert masked["reward"] is None
        assert masked["failure_kind"] == "bad_sample"
        assert masked["failure_reason"]


def test_wait_false_answers_202_then_polling_reaches_done(client, keys):
    slow = [{"name": "slow_constant", "score": 0.6, "delay_s": 0.3}]
    response = client.post(
        "/v1/rewards",
        headers=keys["trainer"],
        json={"samples": [sample("a", "4"), sample("b", "5")], "judges": slow, "wait": False},
    )
    assert response.status_code == 202
    batch_id = response.json()["batch_id"]
    assert response.json()["status"] in ("queued", "running")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        polled = client.get(f"/v1/rewards/{batch_id}", headers=keys["trainer"])
        if polled.json()["status"] == "done":
            break
        assert polled.status_code == 202
        time.sleep(0.05)
    assert polled.status_code == 200
    assert [r["reward"] for r in polled.json()["results"]] == [0.6, 0.6]


def test_repeated_idempotency_key_returns_the_same_batch(client, keys):
    body = {"samples": [sample("a", "4")], "idempotency_key": "run-1/step-3/chunk-0"}
    first = post(client, keys["trainer"], **body)
    second = post(client, keys["trainer"], **body, wait=False)
    assert first.status_code == 200 and second.status_code == 200
    assert first.json()["batch_id"] == second.json()["batch_id"]
    assert second.json()["results"] == first.json()["results"]
    conflict = post(
        client, keys["trainer"], samples=[sample("a", "5")], idempotency_key="run-1/step-3/chunk-0"
    )
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "conflict"


def test_deadline_masks_unscored_samples_as_timeout(client, keys):
    slow = [{"name": "slow_constant", "delay_s": 30}]
    started = time.monotonic()
    response = client.post(
        "/v1/rewards",
        headers=keys["trainer"],
        json={"samples": [sample("a", "4"), sample("b", "4")], "judges": slow, "timeout_s": 1.5},
    )
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert elapsed < 1.5 + 2.0
    results = response.json()["results"]
    assert [r["failure_kind"] for r in results] == ["timeout", "timeout"]
    assert all(r["reward"] is None and r["valid"] is False for r in results)


def test_panel_with_a_failing_judge_uses_the_others(client, keys):
    response = client.post(
        "/v1/rewards",
        headers=keys["trainer"],
        json={
            "samples": [sample("a", "The answer is 4")],
            "judges": [
                "reference_match",
                {"name": "slow_constant", "score": 0.5, "delay_s": 0},
                "always_fails",
            ],
        },
    )
    result = response.json()["results"][0]
    assert result["valid"] is True
    assert result["reward"] == 0.75
    failed = [j for j in result["judges"] if j["error"]]
    assert [j["judge"] for j in failed] == ["always_fails"]
    assert "always fails" in failed[0]["error"]
    assert 0.0 <= result["agreement"] < 1.0


def test_weights_and_aggregator_are_honoured(client, keys):
    response = client.post(
        "/v1/rewards",
        headers=keys["trainer"],
        json={
            "samples": [sample("a", "The answer is 4")],
            "judges": [
                {"name": "reference_match", "weight": 3},
                {"name": "slow_constant", "score": 0.0, "delay_s": 0, "weight": 1},
            ],
            "aggregator": "median",
        },
    )
    assert response.json()["results"][0]["reward"] == 1.0


def test_metrics_count_scored_samples(client, keys):
    def scored_valid() -> float:
        text = client.get("/metrics", headers=keys["reviewer"]).text
        line = next(
            (
                x
                for x in text.splitlines()
                if x.startswith('judge_service_samples_scored_total{outcome="valid"}')
            ),
            "x 0",
        )
        return float(line.split()[-1])

    before = scored_valid()
    post(client, keys["trainer"], samples=[sample("a", "4"), sample("b", "5")])
    assert scored_valid() == before + 2
    assert client.get("/metrics").status_code == 401
    assert (
        "judge_service_batch_seconds_count" in client.get("/metrics", headers=keys["reviewer"]).text
    )


def test_run_id_and_step_are_kept(client, keys):
    body = post(client, keys["trainer"], samples=[sample("a", "4")], run_id="grpo-1", step=7).json()
    assert (body["run_id"], body["step"]) == ("grpo-1", 7)
    again = client.get(f"/v1/rewards/{body['batch_id']}", headers=keys["reviewer"]).json()
    assert again["results"] == body["results"]


def test_answer_from_the_executor_equals_a_later_read_of_the_batch(client, keys):
    """With ``wait`` the answer is the batch as the executor stored it; a later GET
    reads the same batch from the database and must give the same JSON."""
    response = client.post(
        "/v1/rewards",
        headers=keys["trainer"],
        json={
            "samples": [
                sample("right", "The answer is 4", group="g"),
                sample("wrong", "5", group="g"),
                sample("blank", "  ", group="g"),
                sample("odd", "4 \u202e🚀", reference="4"),
            ],
            "judges": ["reference_match", "always_fails"],
            "run_id": "same-answer",
            "step": 7,
        },
    )
    assert response.status_code == 200, response.text
    answered = response.json()
    assert answered["status"] == "done" and answered["step"] == 7
    assert [r["failure_kind"] for r in answered["results"]] == [None, None, "bad_sample", None]
    assert answered["groups"]["g"]["has_advantage"] is True
    read_back = client.get(f"/v1/rewards/{answered['batch_id']}", headers=keys["trainer"])
    assert read_back.status_code == 200
    assert read_back.json() == answered


def test_compact_answer_leaves_out_judges_and_components_but_stores_them(client, keys):
    """``detail: compact`` (what the trainer adapters ask for) answers rewards, masks and
    hack scores only; the full verdicts are stored and a full GET returns them."""
    samples = [sample("right", "The answer is 4", group="g"), sample("blank", " ", group="g")]
    body = {"samples": samples, "idempotency_key": "compact-1", "step": 3}
    compact = post(client, keys["trainer"], **body, detail="compact")
    assert compact.status_code == 200, compact.text
    answered = compact.json()
    kept = {"id", "reward", "valid", "failure_kind", "failure_reason", "raw_reward", "penalty"}
    kept |= {"hack_score", "agreement", "findings"}
    assert [set(r) for r in answered["results"]] == [kept, kept]
    assert [r["reward"] for r in answered["results"]] == [1.0, None]
    assert answered["results"][1]["failure_kind"] == "bad_sample"
    url = f"/v1/rewards/{answered['batch_id']}"
    assert client.get(url, params={"detail": "compact"}, headers=keys["trainer"]).json() == answered
    full = client.get(url, headers=keys["trainer"]).json()
    assert full["results"][0]["judges"][0]["judge"] == "reference_match"
    assert full["results"][0]["components"] == {"judge/reference_match": 1.0}
    for short, whole in zip(answered["results"], full["results"], strict=True):
        assert short == {k: v for k, v in whole.items() if k not in ("judges", "components")}
    # the same request in full detail is the same batch: detail does not change rewards
    again = post(client, keys["trainer"], **body)
    assert again.status_code == 200 and again.json() == full
    wrong = post(client, keys["trainer"], samples=samples, detail="terse")
    assert wrong.status_code == 422 and "detail" in wrong.text


def test_a_batch_reads_back_identically_after_a_restart(embedded_settings, keys):
    """Scored, then the embedded app stops and starts again on the same SQLite file:
    the batch reads back through the API as it was answered, and is not scored again."""
    from judge_service.core.api.app import create_app

    body = {
        "samples": [
            sample("right", "The answer is 4", group="g"),
            sample("wrong", "5", group="g"),
            sample("blank", " ", group="g"),
            sample("odd", "4 nul\x00 \u202e🚀", reference="4"),
        ],
        "judges": ["reference_match", "always_fails"],
        "run_id": "restart",
        "step": 3,
        "idempotency_key": "restart-1",
    }
    with TestClient(create_app(embedded_settings)) as first:
        answered = first.post("/v1/rewards", json=body, headers=keys["trainer"])
        assert answered.status_code == 200, answered.text
        batch_id = answered.json()["batch_id"]
        before = first.get(f"/v1/rewards/{batch_id}", headers=keys["trainer"]).json()
    assert before == answered.json()
    with TestClient(create_app(embedded_settings)) as second:
        after = second.get(f"/v1/rewards/{batch_id}", headers=keys["trainer"])
        assert after.status_code == 200 and after.json() == before
        again = second.post("/v1/rewards", json=body, headers=keys["trainer"])
        assert again.status_code == 200 and again.json() == before  # the same batch, not rescored


def test_a_batch_too_big_for_the_local_judge_says_so(migrated_sqlite_url, fake_openai):
    """The local judge (here reached at JS_LOCAL_MODEL_URL, the fake standing in for its
    server) cannot score 30 samples in 5 s at the rate assumed of it: the answer warns."""
    from judge_service.core.api.app import create_app
    from judge_service.core.settings import get_settings
    from judge_service.judging.names import LOCAL_JUDGE_SAMPLES_PER_S
    from tests.conftest import make_key

    settings = get_settings(
        database_url=migrated_sqlite_url,
        broker_url=None,
        cache_url=None,
        local_model_url=fake_openai.url,
    )
    headers = {"Authorization": f"Bearer {make_key(settings.database_url, 'trainer')}"}
    many = [{"id": f"s{i}", "prompt": "2+2?", "completion": f"{i}"} for i in range(30)]
    with TestClient(create_app(settings)) as client:
        slow = client.post("/v1/rewards", json={"samples": many, "timeout_s": 5}, headers=headers)
        assert slow.status_code == 200, slow.text
        (warning,) = slow.json()["warnings"]
        rate = LOCAL_JUDGE_SAMPLES_PER_S
        assert f"~{rate:.2g} samples/s" in warning and "30 samples" in warning
        assert "timeout_s=5" in warning
        assert fake_openai.requests["smollm2"] == 30  # the fake is fast: all scored anyway
        batch_id = slow.json()["batch_id"]
        polled = client.get(f"/v1/rewards/{batch_id}", headers=headers)
        assert polled.status_code == 200 and polled.json()["warnings"] == [warning]
        queued = client.post(
            "/v1/rewards", json={"samples": many, "timeout_s": 5, "wait": False}, headers=headers
        )
        assert queued.status_code == 202 and queued.json()["warnings"] == [warning]
        openrlhf = client.post(
            "/get_reward", json={"query": [f"2+2? {i}" for i in range(30)]}, headers=headers
        )
        assert openrlhf.status_code == 200, openrlhf.text
        (rlhf_warning,) = openrlhf.json()["warnings"]
        assert "30 samples" in rlhf_warning
        fits = client.post("/v1/rewards", json={"samples": many[:2]}, headers=headers)
        assert fits.status_code == 200 and fits.json()["warnings"] == []
        other = post(client, headers, samples=many, timeout_s=5)  # no local judge: no warning
        assert other.status_code == 200 and other.json()["warnings"] == []
