"""Batches survive their workers: real Celery worker processes on Redis, real databases.

The visibility timeout is set to an hour in these tests, so the broker's own redelivery
can't be what finishes a batch: the leases and the sweepers must.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
import redis

from judge_service.settings import get_settings
from judge_service.storage import leases
from judge_service.storage.db import dispose_engines, session_scope
from judge_service.worker.celery_app import QUEUE
from judge_service.worker.dispatch import CeleryDispatcher
from tests.fakes import FakeOpenAIServer
from tests.helpers import Server, Worker, create_key, run_cli, service_env
from tests.review_support import RUBRIC, llm_judge, samples, wait_for_job
from trainer_bridge import RewardClient

SLOW = [{"name": "slow_constant", "score": 0.5, "delay_s": 0.3}]
LEASE_S = 3
#: Seconds a worker may take to start, and an HTTP call to answer: these tests start many
#: processes on a small shared machine.
START_S, HTTP_S = 180, 120


@pytest.fixture(params=["postgresql", "sqlite"])
def lease_env(request: pytest.FixtureRequest, tmp_path: Path, redis_url: str) -> dict[str, str]:
    """A Celery service on Redis and each real database, with short leases and an hour's
    visibility timeout."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'leases.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    env = service_env(
        JS_DATABASE_URL=get_settings(database_url=url).database_url,
        JS_BROKER_URL=redis_url,
        JS_ALLOW_FREE_ENDPOINTS="true",  # the fake model server is named by api_base
        JS_TASK_VISIBILITY_TIMEOUT_S="3600",
        JS_LEASE_S=str(LEASE_S),
        JS_WORKER_GRACE_S="5",
        JS_SAMPLE_CONCURRENCY="2",
    )
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    return env


def _samples(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}", "prompt": "p", "completion": "c"} for i in range(n)]


def _wait(http: httpx.Client, batch_id: str, limit_s: float, why: object) -> dict:
    deadline = time.monotonic() + limit_s
    while (body := http.get(f"/v1/rewards/{batch_id}").json())["status"] != "done":
        assert time.monotonic() < deadline, why() if callable(why) else why
        time.sleep(0.1)
    return body


def _results_per_sample(url: str, batch_id: str) -> list[int]:
    """How many results each sample of the batch has, read straight from the database."""
    from sqlalchemy import text

    with session_scope(url) as session:
        rows = session.execute(
            text(
                "SELECT count(r.id) FROM samples s LEFT JOIN results r ON r.sample_id = s.id "
                "WHERE s.batch_id = :b GROUP BY s.id"
            ),
            {"b": batch_id},
        ).all()
    return [count for (count,) in rows]


def _lease_owner_pid(url: str, batch_id: str, limit_s: float = 60) -> int:
    deadline = time.monotonic() + limit_s
    while True:
        with session_scope(url) as session:
            owner, _ = leases.holder(session=session, batch_id=batch_id)
        if owner:
            return int(owner.split(":")[1])
        assert time.monotonic() < deadline, "nobody leased the batch"
        time.sleep(0.05)


def _pool_pids(worker: Worker) -> set[int]:
    pid = worker.proc.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return {pid, *map(int, children)}


def _ready_workers(http: httpx.Client) -> list[dict]:
    """The workers /readyz lists, once it says ready."""
    ready = http.get("/readyz")
    return ready.json()["workers"] if ready.status_code == 200 else []


@pytest.fixture
def started(tmp_path: Path):
    """Processes started by a test, killed at its end whatever happens."""
    processes: list = []
    yield processes
    for process in processes:
        process.kill()
    dispose_engines()


def test_a_sigkilled_worker_batch_is_finished_by_another_within_seconds(
    tmp_path: Path, lease_env: dict[str, str], started: list
):
    env, url = lease_env, lease_env["JS_DATABASE_URL"]
    key = create_key("trainer", env=env, cwd=tmp_path)
    started.append(server := Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"))
    pool = [
        Worker(env=env, cwd=tmp_path, log=tmp_path / f"worker{i}.log", concurrency=1)
        for i in range(2)
    ]
    started.extend(pool)
    n = 30
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_S) as http:
        body = {"samples": _samples("s", n), "judges": SLOW, "wait": False, "timeout_s": 300}
        batch_id = http.post("/v1/rewards", json=body).json()["batch_id"]
        pid = _lease_owner_pid(url, batch_id)
        [holder] = [w for w in pool if pid in _pool_pids(w)]
        [other] = [w for w in pool if w is not holder]
        deadline = time.monotonic() + 60
        while http.get(f"/v1/rewards/{batch_id}").json()["progress"]["scored"] < 3:
            assert time.monotonic() < deadline, holder.log()
            time.sleep(0.05)
        holder.kill()  # SIGKILL to the worker's whole process group
        killed_at = time.monotonic()
        scored_at_kill = http.get(f"/v1/rewards/{batch_id}").json()["progress"]["scored"]
        assert 0 < scored_at_kill < n
        done = _wait(http, batch_id, 120, other.log)
        settle_s = time.monotonic() - killed_at
    print(f"\nSIGKILL to batch done: {settle_s:.1f} s (lease {LEASE_S} s, visibility 3600 s)")
    assert settle_s < 60, other.log()  # the broker alone would take the hour
    assert [r["id"] for r in done["results"]] == [f"s{i}" for i in range(n)]
    assert all(r["valid"] and r["reward"] == 0.5 for r in done["results"])
    assert _results_per_sample(url, batch_id) == [1] * n
    assert f"re-dispatching batch {batch_id}" in other.log()


def test_a_batch_whose_message_the_broker_lost_is_redispatched(
    tmp_path: Path, lease_env: dict[str, str], redis_url: str, started: list
):
    """One worker process busy with batch A; batch B's message waits in Redis. The Redis
    database is flushed (as a broker restarted without persistence): both messages are
    gone. A is finished by its worker, which still holds it; B is re-sent by a sweeper."""
    env, url = lease_env, lease_env["JS_DATABASE_URL"]
    key = create_key("trainer", env=env, cwd=tmp_path)
    started.append(server := Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"))
    started.append(
        worker := Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log", concurrency=1)
    )
    broker = redis.Redis.from_url(redis_url)
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_S) as http:
        first = {"samples": _samples("a", 16), "judges": SLOW, "wait": False, "timeout_s": 300}
        a = http.post("/v1/rewards", json=first).json()["batch_id"]
        _lease_owner_pid(url, a)
        second = {"samples": _samples("b", 4), "judges": SLOW, "wait": False, "timeout_s": 300}
        b = http.post("/v1/rewards", json=second).json()["batch_id"]
        assert broker.llen(QUEUE) == 1  # B waits: the worker's one slot is taken by A
        broker.flushdb()
        flushed_at = time.monotonic()
        done_a = _wait(http, a, 120, worker.log)
        done_b = _wait(http, b, 120, worker.log)
        settle_s = time.monotonic() - flushed_at
    print(f"\nbroker flushed to lost batch done: {settle_s:.1f} s (lease {LEASE_S} s)")
    assert all(r["valid"] and r["reward"] == 0.5 for r in done_a["results"] + done_b["results"])
    assert _results_per_sample(url, a) == [1] * 16
    assert _results_per_sample(url, b) == [1] * 4
    assert f"re-dispatching batch {b}" in worker.log()


@pytest.mark.parametrize("lease_env", ["postgresql"], indirect=True)
def test_a_message_for_a_done_or_leased_batch_is_acknowledged_and_dropped(
    tmp_path: Path, lease_env: dict[str, str], redis_url: str, started: list
):
    env, url = lease_env, lease_env["JS_DATABASE_URL"]
    key = create_key("trainer", env=env, cwd=tmp_path)
    started.append(server := Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"))
    started.append(worker := Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log"))
    settings = get_settings(database_url=url, broker_url=redis_url)
    dispatcher = CeleryDispatcher(settings)
    broker = redis.Redis.from_url(redis_url)
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_S) as http:
            body = {"samples": _samples("s", 40), "judges": SLOW, "wait": False}
            accepted = http.post("/v1/rewards", json=body)
            assert accepted.status_code in (200, 202), accepted.text
            batch_id = accepted.json()["batch_id"]
            _lease_owner_pid(url, batch_id)
            dispatcher.submit(batch_id)  # a duplicate while the first run holds the lease
            first = _wait(http, batch_id, 120, worker.log)
            dispatcher.submit(batch_id)  # and one after it is done
            deadline = time.monotonic() + 30
            while worker.log().count(f"message for batch {batch_id} dropped") < 2:
                assert time.monotonic() < deadline, worker.log()
                time.sleep(0.1)
            again = http.get(f"/v1/rewards/{batch_id}").json()
    finally:
        dispatcher.close()
    log = worker.log()
    assert f"message for batch {batch_id} dropped: leased" in log
    assert f"message for batch {batch_id} dropped: done" in log
    assert again == first  # nothing rescored or rewritten
    assert _results_per_sample(url, batch_id) == [1] * 40
    time.sleep(0.5)  # the acknowledgement follows the task's return
    assert broker.llen(QUEUE) == 0 and broker.hlen("unacked") == 0  # acknowledged, not kept


@pytest.mark.parametrize("lease_env", ["postgresql"], indirect=True)
def test_no_worker_is_a_503_with_retry_after_and_readyz_lists_the_workers(
    tmp_path: Path, lease_env: dict[str, str], started: list
):
    env = lease_env
    key = create_key("trainer", env=env, cwd=tmp_path)
    started.append(server := Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"))
    headers = {"Authorization": f"Bearer {key}"}
    body = {"samples": _samples("s", 2), "judges": ["reference_match"]}
    with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_S) as http:
        ready = http.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["workers"].startswith("no worker heartbeat")
        assert ready.json()["workers"] == []
        refused = http.post("/v1/rewards", json=body)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "no_worker"
        assert int(refused.headers["retry-after"]) > 0
        openrlhf = http.post("/get_reward", json={"query": ["a"]})
        assert openrlhf.status_code == 503 and openrlhf.json()["error"]["code"] == "no_worker"
        assert (
            http.post("/v1/rewards", json=body, headers={"Authorization": "Bearer x"}).status_code
            == 401
        )

        worker = Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log", concurrency=2)
        started.append(worker)
        pool = _pool_pids(worker) - {worker.proc.pid}
        deadline = time.monotonic() + 30
        while len(listed := _ready_workers(http)) < len(pool):  # each process beats at start
            assert time.monotonic() < deadline, http.get("/readyz").text
            time.sleep(0.2)
        assert {w["pid"] for w in listed} == pool and len(pool) == 2
        assert all(w["busy"] == 0 and w["id"].split(":")[1] == str(w["pid"]) for w in listed)
        assert http.post("/v1/rewards", json=body).status_code == 200

        worker.kill()  # all gone: listed no more after a lease, refused after the grace
        deadline = time.monotonic() + 30
        while http.post("/v1/rewards", json={**body, "wait": False}).status_code != 503:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert http.get("/readyz").json()["workers"] == []


@pytest.mark.parametrize("lease_env", ["sqlite"], indirect=True)
def test_the_trainer_bridge_waits_out_no_worker(
    tmp_path: Path, lease_env: dict[str, str], started: list
):
    """The bridge meets 503 no_worker, retries as Retry-After says, and gets its rewards
    once a worker starts; it knows nothing of workers."""
    env = lease_env
    key = create_key("trainer", env=env, cwd=tmp_path)
    started.append(server := Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"))
    samples = [
        {"id": f"s{i}", "prompt": "2+2?", "completion": "4", "reference": "4"} for i in range(3)
    ]
    probe = httpx.post(
        f"{server.url}/v1/rewards",
        json={"samples": samples, "judges": ["reference_match"]},
        headers={"Authorization": f"Bearer {key}"},
        timeout=HTTP_S,
    )
    assert probe.status_code == 503 and probe.json()["error"]["code"] == "no_worker"
    got: dict = {}

    def train_step() -> None:
        client = RewardClient(server.url, key, timeout=START_S + HTTP_S, retries=1)
        got["rewards"] = client.rewards(samples, judges=["reference_match"])
        got["at"] = time.monotonic()

    step = threading.Thread(target=train_step)
    began = time.monotonic()
    step.start()
    time.sleep(3)
    assert step.is_alive()  # still waiting, though retries=1: a 503 with Retry-After
    worker_at = time.monotonic()
    started.append(Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log", concurrency=1))
    step.join(timeout=START_S + HTTP_S)
    assert not step.is_alive()
    assert got["rewards"] == [(1.0, True, 0.0)] * 3
    assert got["at"] > worker_at
    waited, worker_after = got["at"] - began, worker_at - began
    print(f"\nbridge waited {waited:.1f} s for a worker (started after {worker_after:.1f} s)")


@pytest.mark.parametrize("lease_env", ["postgresql"], indirect=True)
def test_a_sigkilled_pool_process_is_replaced_and_its_batch_finished(
    tmp_path: Path, lease_env: dict[str, str], started: list
):
    """Only the pool process dies (the worker's parent lives on and requeues the message,
    which the next process drops while the dead lease lasts): the sweeper re-sends it."""
    env, url = lease_env, lease_env["JS_DATABASE_URL"]
    key = create_key("trainer", env=env, cwd=tmp_path)
    started.append(server := Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"))
    started.append(
        worker := Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log", concurrency=1)
    )
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_S) as http:
        body = {"samples": _samples("s", 20), "judges": SLOW, "wait": False, "timeout_s": 300}
        batch_id = http.post("/v1/rewards", json=body).json()["batch_id"]
        pid = _lease_owner_pid(url, batch_id)
        assert pid != worker.proc.pid
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        done = _wait(http, batch_id, 120, worker.log)
        settle_s = time.monotonic() - killed_at
    print(f"\npool process SIGKILL to batch done: {settle_s:.1f} s")
    assert all(r["valid"] for r in done["results"])
    assert _results_per_sample(url, batch_id) == [1] * 20


@pytest.mark.parametrize("lease_env", ["postgresql"], indirect=True)
def test_a_mining_job_whose_message_the_broker_lost_is_redispatched(
    tmp_path: Path,
    lease_env: dict[str, str],
    redis_url: str,
    started: list,
    fake: FakeOpenAIServer,
):
    """The worker's one slot is busy with a batch; a mining job's message waits in Redis
    behind it. The Redis database is flushed (a broker restarted without persistence):
    once the worker is free, its sweeper finds the job still queued and re-sends it."""
    env = lease_env
    admin = {"Authorization": f"Bearer {create_key('admin', env=env, cwd=tmp_path)}"}
    started.append(server := Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log"))
    started.append(
        worker := Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log", concurrency=1)
    )
    broker = redis.Redis.from_url(redis_url)
    with httpx.Client(base_url=server.url, headers=admin, timeout=HTTP_S) as http:
        http.post("/v1/rubrics", json=RUBRIC).raise_for_status()
        rollouts = {"samples": samples(4), "judges": [llm_judge(fake)], "rubric": RUBRIC["name"]}
        assert http.post("/v1/rewards", json={**rollouts, "run_id": "lost"}).status_code == 200
        busy = {"samples": _samples("a", 24), "judges": SLOW, "wait": False, "timeout_s": 300}
        busy_id = http.post("/v1/rewards", json=busy).json()["batch_id"]
        _lease_owner_pid(lease_env["JS_DATABASE_URL"], busy_id)
        queued = http.post(
            f"/v1/rubrics/{RUBRIC['name']}/mine", json={"run_id": "lost", "model": llm_judge(fake)}
        )
        assert queued.status_code == 202, queued.text
        assert broker.llen(QUEUE) == 1  # the job waits: the worker's one slot is taken
        broker.flushdb()
        job = wait_for_job(http, admin, RUBRIC["name"], queued.json()["id"], timeout=120)
    assert job["status"] == "done" and job["result"]["items"], worker.log()
    assert f"re-dispatching mining job {job['id']}" in worker.log()
