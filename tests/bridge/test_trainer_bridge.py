"""trainer_bridge against a running service: client, TRL (a real GRPO run), veRL, OpenRLHF."""

from __future__ import annotations

import asyncio
import email.utils
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import Server, create_key, run_cli, service_env
from trainer_bridge import (
    AsyncRewardClient,
    RewardClient,
    RewardConnectionError,
    RewardServiceError,
)
from trainer_bridge.trl import reward_function
from trainer_bridge.verl import compute_score, compute_score_batch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    """An embedded service in its own process, with a trainer key."""
    home = tmp_path_factory.mktemp("bridge")
    env = service_env(JS_DATABASE_URL=f"sqlite:///{home / 'bridge.db'}")
    run_cli("db", "upgrade", env=env, cwd=home)
    key = create_key("trainer", env=env, cwd=home)
    server = Server(env=env, cwd=home, log=home / "serve.log")
    yield {"url": server.url, "key": key, "db": home / "bridge.db", "home": home}
    server.kill()


def _samples(n: int) -> list[dict]:
    return [
        {"id": f"s{i}", "prompt": "2+2?", "completion": "4" if i % 3 else "5", "reference": "4"}
        for i in range(n)
    ]


def test_client_chunks_concurrently_and_keeps_order(service):
    client = RewardClient(service["url"], service["key"], chunk_size=7, max_concurrency=3)
    results = client.score(_samples(50), judges=["reference_match"], run_id="chunks")
    assert [r.id for r in results] == [f"s{i}" for i in range(50)]
    assert [r.reward for r in results] == [1.0 if i % 3 else 0.0 for i in range(50)]
    assert len({r.batch_id for r in client.last_responses}) == 8  # ceil(50 / 7) batches


def test_rewards_read_the_same_rewards_masks_and_hack_scores_as_whole_results(service):
    """``rewards`` reads only what a trainer takes from each result, in the caller's order."""
    samples = [*_samples(20), {"id": "blank", "prompt": "2+2?", "completion": " "}]
    client = RewardClient(service["url"], service["key"], chunk_size=8)
    whole = client.score(samples, judges=["reference_match"], run_id="rewards-a")
    rewards = client.rewards(samples, judges=["reference_match"], run_id="rewards-b")
    assert rewards == [(r.reward, r.valid, r.hack_score) for r in whole]
    assert rewards[-1].valid is False and rewards[-1].reward is None  # masked, not 0
    assert sum(r.reward == 0.0 for r in rewards) == 7  # the wrong answers are real zeros


def test_rewards_poll_a_batch_still_running_and_refuse_what_is_no_answer():
    polls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            answer = {"batch_id": "b1", "status": "running", "results": []}
            return httpx.Response(202, json={**answer, "progress": {"scored": 0, "total": 1}})
        polls.append(request.url.params["detail"])
        result = {"id": "s0", "reward": None, "valid": False, "failure_kind": "timeout"}
        return httpx.Response(200, json={"batch_id": "b1", "status": "done", "results": [result]})

    client = AsyncRewardClient("http://svc", transport=httpx.MockTransport(handler))
    assert asyncio.run(client.rewards(_samples(1))) == [(None, False, 0.0)]
    assert polls == ["compact"]
    page = httpx.MockTransport(lambda request: httpx.Response(200, text="<html>proxy</html>"))
    with pytest.raises(RewardServiceError) as bad:
        asyncio.run(AsyncRewardClient("http://svc", transport=page).rewards(_samples(1)))
    assert bad.value.code == "bad_response"


def test_client_raises_clear_errors(service):
    with pytest.raises(RewardServiceError) as bad:
        RewardClient(service["url"], service["key"]).score(_samples(2), judges=["nope"])
    assert bad.value.status == 422 and bad.value.code == "unknown_judge"
    with pytest.raises(RewardServiceError) as unauthorised:
        RewardClient(service["url"], "js_wrong").score(_samples(1), judges=["reference_match"])
    assert unauthorised.value.status == 401
    with pytest.raises(RewardConnectionError):
        RewardClient("http://127.0.0.1:9", "k", retries=1, backoff_s=0.01).score(_samples(1))


def test_client_retries_5xx_with_the_same_idempotency_key():
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body["idempotency_key"])
        if len(seen) < 3:
            return httpx.Response(503, json={"error": {"code": "unavailable", "message": "x"}})
        results = [{"id": s["id"], "reward": 0.5, "valid": True} for s in body["samples"]]
        return httpx.Response(
            200,
            json={
                "batch_id": "b",
                "status": "done",
                "results": results,
                "progress": {"scored": 1, "total": 1},
            },
        )

    client = AsyncRewardClient(
        "http://svc", "k", backoff_s=0.01, transport=httpx.MockTransport(handler)
    )
    results = asyncio.run(client.score(_samples(1)))
    assert [r.reward for r in results] == [0.5]
    assert len(seen) == 3 and len(set(seen)) == 1


def _answer_after(failures: list[httpx.Response]):
    """A MockTransport handler: ``failures`` one per POST, then a done answer."""
    posts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        posts.append(time.monotonic())
        if len(posts) <= len(failures):
            return failures[len(posts) - 1]
        samples = json.loads(request.content)["samples"]
        results = [{"id": s["id"], "reward": 0.5, "valid": True} for s in samples]
        done = {"batch_id": "b", "status": "done", "results": results}
        return httpx.Response(200, json={**done, "progress": {"scored": 1, "total": 1}})

    return handler, posts


def test_a_503_with_retry_after_is_retried_without_spending_the_retries():
    """No worker alive yet (503, Retry-After) is the service asking to come back: the client
    comes back until the deadline, and its ``retries`` stay for real failures."""
    busy = httpx.Response(
        503, headers={"Retry-After": "0"}, json={"error": {"code": "no_worker", "message": "x"}}
    )
    down = httpx.Response(502, json={"error": {"code": "bad_gateway", "message": "x"}})
    handler, posts = _answer_after([busy, busy, busy, down, busy])
    client = AsyncRewardClient(
        "http://svc", retries=1, backoff_s=0.01, transport=httpx.MockTransport(handler)
    )
    assert [r.reward for r in asyncio.run(client.score(_samples(1)))] == [0.5]
    assert len(posts) == 6
    handler, posts = _answer_after([down, down])
    client = AsyncRewardClient(
        "http://svc", retries=1, backoff_s=0.01, transport=httpx.MockTransport(handler)
    )
    with pytest.raises(RewardServiceError) as failed:
        asyncio.run(client.score(_samples(1)))
    assert failed.value.status == 502 and len(posts) == 2


def test_a_429_retry_after_date_is_honoured():
    """Retry-After as an HTTP date (RFC 9110) is waited for, like delta-seconds."""
    at = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: 1-2 s away
    limited = httpx.Response(
        429, headers={"Retry-After": at}, json={"error": {"code": "rate_limited", "message": "x"}}
    )
    handler, posts = _answer_after([limited])
    client = AsyncRewardClient("http://svc", backoff_s=0.01, transport=httpx.MockTransport(handler))
    assert [r.reward for r in asyncio.run(client.score(_samples(1)))] == [0.5]
    assert len(posts) == 2 and posts[1] - posts[0] >= 1.0


def test_client_chunks_keep_grpo_groups_whole_and_answers_in_input_order():
    """A chunk boundary never splits a group (its stats and relative judges need all of
    it); results still come back in the caller's order."""
    batches: list[list[dict]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        batches.append(body["samples"])
        results = [{"id": s["id"], "reward": 0.5, "valid": True} for s in body["samples"]]
        progress = {"scored": len(results), "total": len(results)}
        answer = {"batch_id": "b", "status": "done", "results": results, "progress": progress}
        return httpx.Response(200, json=answer)

    samples = [
        {"id": f"s{i}", "group_id": f"g{i % 3}", "prompt": "p", "completion": "c"}
        for i in range(12)
    ] + [{"id": "loose", "prompt": "p", "completion": "c"}]
    client = AsyncRewardClient("http://svc", chunk_size=5, transport=httpx.MockTransport(handler))
    results = asyncio.run(client.score(samples))
    assert [r.id for r in results] == [s["id"] for s in samples]
    groups_per_batch = [{s.get("group_id") for s in batch} for batch in batches]
    for group in ("g0", "g1", "g2"):
        assert sum(group in groups for groups in groups_per_batch) == 1, groups_per_batch
    with pytest.raises(ValueError, match="unique"):
        asyncio.run(client.score(samples + samples[:1]))


def test_client_names_an_answer_that_is_not_json():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>a proxy's login page</html>")

    client = AsyncRewardClient("http://svc", transport=httpx.MockTransport(handler))
    with pytest.raises(RewardServiceError) as bad:
        asyncio.run(client.score(_samples(1)))
    assert bad.value.code == "bad_response" and "login page" in bad.value.message


def test_trl_reward_function_masks_as_none_and_groups_prompts(service):
    logged: dict[str, list] = {}
    reward = reward_function(
        service["url"], api_key=service["key"], judges=["reference_match"], run_id="trl-unit"
    )

    class State:
        global_step = 5

    rewards = asyncio.run(
        reward(
            prompts=["2+2?", "2+2?", "Colour?"],
            completions=["4", "5", "red"],
            completion_ids=[[1], [2], [3]],
            reference=["4", "4", ""],
            trainer_state=State(),
            log_extra=lambda name, values: logged.setdefault(name, values),
            log_metric=lambda name, value: logged.setdefault(name, value),
        )
    )
    assert rewards == [1.0, 0.0, None]
    assert logged["hack_score"] == [0.0, 0.0, 0.0]
    assert logged["judge_service/valid_fraction"] == pytest.approx(2 / 3)
    with sqlite3.connect(service["db"]) as db:
        steps = db.execute("SELECT step FROM batches WHERE run_id = 'trl-unit'").fetchall()
        groups = db.execute(
            "SELECT COUNT(DISTINCT s.group_id) FROM samples s JOIN batches b "
            "ON b.id = s.batch_id WHERE b.run_id = 'trl-unit'"
        ).fetchone()
    assert steps == [(5,)]
    assert groups == (2,)


def test_real_trl_grpo_run_takes_rewards_from_the_service(service):
    """A real GRPOTrainer: 2 steps, tiny random model, rewards over HTTP."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "trainer_bridge/examples/grpo_trl_vllm.py"),
            "--smoke",
            "--service-url",
            service["url"],
            "--api-key",
            service["key"],
            "--run-id",
            "trl-grpo",
            "--output-dir",
            str(service["home"] / "grpo"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 2
    assert summary["rewards"] == 8
    assert summary["masked"] == 4  # the prompt without a reference reached TRL as None
    with sqlite3.connect(service["db"]) as db:
        rows = db.execute(
            "SELECT step, n_samples, status FROM batches WHERE run_id = 'trl-grpo' ORDER BY step"
        ).fetchall()
    assert [(step, n) for step, n, _ in rows] == [(0, 4), (1, 4)]
    assert {status for *_, status in rows} == {"done"}


def test_verl_compute_score(service, monkeypatch):
    monkeypatch.setenv("JUDGE_SERVICE_URL", service["url"])
    monkeypatch.setenv("JUDGE_SERVICE_KEY", service["key"])
    info = {"judges": ["reference_match"], "prompt": "2+2?"}
    assert compute_score("math", "The answer is 4", "4", info) == {
        "score": 1.0,
        "hack_score": 0.0,
        "valid": True,
        "failure_kind": None,
    }
    batch = compute_score_batch(["m", "m"], ["4", ""], ["4", "4"], [info, info])
    assert [b["valid"] for b in batch] == [True, False]
    assert batch[1]["score"] == 0.0 and batch[1]["failure_kind"] == "bad_sample"


def test_openrlhf_get_reward_shape(service):
    body = {
        "query": ["Q: 2+2? A: 4", "Q: 2+2? A: 5", "Q: colour? A: "],
        "prompts": ["Q: 2+2? A:", "Q: 2+2? A:", "Q: colour? A:"],
        "labels": ["4", "4", "red"],
    }
    url = f"{service['url']}/get_reward?api_key={service['key']}&judges=reference_match"
    response = httpx.post(url, json=body, timeout=60)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["rewards"] == [1.0, 0.0, 0.0]
    assert answer["scores"] == answer["rewards"]
    assert answer["extra_logs"]["valid"] == [1.0, 1.0, 0.0]
    assert len(answer["extra_logs"]["hack_score"]) == 3
    assert httpx.post(f"{service['url']}/get_reward", json=body).status_code == 401
    mismatched = httpx.post(url, json={**body, "labels": ["4"]}, timeout=60)
    assert mismatched.status_code == 422


def test_verifiers_group_reward_function_makes_one_call_per_group(service):
    from trainer_bridge.verifiers import group_reward_function

    reward = group_reward_function(
        service["url"], api_key=service["key"], judges=["reference_match"], run_id="vf-group"
    )
    states: list[dict] = [{}, {}, {}]
    rewards = asyncio.run(
        reward(
            prompts=["2+2?"] * 3,
            completions=["4", "5", " "],
            answers=["4", "4", "4"],
            states=states,
        )
    )
    assert rewards == [1.0, 0.0, 0.0]  # the blank one is masked, reported as masked_value
    assert [s["judge_service_valid"] for s in states] == [True, True, False]
    with sqlite3.connect(service["db"]) as db:
        batches = db.execute("SELECT n_samples FROM batches WHERE run_id = 'vf-group'").fetchall()
    assert batches == [(3,)]


def test_verifiers_rubric_scores_a_group_through_the_service(service):
    """verifiers' own ``Rubric`` takes the group reward function (recognised by its plural
    arguments), calls it once per group, and writes the rewards into its states."""
    import verifiers as vf

    from trainer_bridge.verifiers import group_reward_function

    rubric = vf.Rubric(
        funcs=[
            group_reward_function(
                service["url"], api_key=service["key"], judges=["reference_match"], run_id="vf-rub"
            )
        ]
    )
    prompt = [{"role": "user", "content": "What is 2+2?"}]
    states = [
        vf.State(
            prompt=prompt,
            completion=[{"role": "assistant", "content": text}],
            answer="4",
            trajectory=[],
        )
        for text in ("The answer is 4", "5", "")
    ]
    asyncio.run(rubric.score_group(states))
    assert [s["reward"] for s in states] == [1.0, 0.0, 0.0]
    assert [s["judge_service_valid"] for s in states] == [True, True, False]
    assert states[0]["advantage"] == pytest.approx(2 / 3)
    with sqlite3.connect(service["db"]) as db:
        batches = db.execute("SELECT n_samples FROM batches WHERE run_id = 'vf-rub'").fetchall()
    assert batches == [(3,)]


def test_verifiers_group_whose_call_fails_is_masked_with_the_reason():
    from trainer_bridge.verifiers import group_reward_function

    reward = group_reward_function("http://127.0.0.1:9", api_key="k", retries=1, backoff_s=0.01)
    states: list[dict] = [{}, {}]
    rewards = asyncio.run(reward(prompts=["p", "p"], completions=["a", "b"], states=states))
    assert rewards == [0.0, 0.0]
    assert [s["judge_service_valid"] for s in states] == [False, False]
    assert "127.0.0.1:9" in states[0]["judge_service_error"]
