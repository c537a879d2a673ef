"""Batches survive their workers: real Celery worker processes on Redis, real databases.

The visibility timeout is set to an hour in these tests, so the broker's own redelivery
can't be what finishes a batch: the leases and the sweepers must.

Each database gets one service for the module (a migrated database, its ``serve`` process,
keys, and a ``Fleet`` of idle worker processes that the tests reuse and may kill): starting
processes is what these tests spend most time on. Every batch has an id of its own, so the
tests share it without seeing each other's work. The tests about having no worker at all
get a database and a server of their own (and stop the module's workers, which would take
their messages from the broker).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from judge_service.core.settings import get_settings
from judge_service.core.storage import leases
from judge_service.core.storage.db import dispose_engines, session_scope
from judge_service.core.worker.celery_app import QUEUE
from judge_service.core.worker.dispatch import CeleryDispatcher
from tests.conftest import REDIS, make_key
from tests.fakes import FakeOpenAIServer
from tests.helpers import Server, Worker, postgres_database, service_env, wait_until
from tests.review_support import RUBRIC, llm_judge, samples, wait_for_job
from tests.support_workers import Fleet, pool_pids
from trainer_bridge import RewardClient

SLOW = [{"name": "slow_constant", "score": 0.5, "delay_s": 0.3}]
LEASE_S = 3
#: Seconds a worker may take to start, and an HTTP call to answer: these tests start many
#: processes on a small shared machine.
START_S, HTTP_S = 180, 120
#: The Redis database of conftest's ``redis_url`` (each test still asks for that fixture,
#: which empties it before and after the test).
BROKER_URL = f"{REDIS}/{int(os.environ.get('JS_TEST_REDIS_DB', '9'))}"


def lease_env(database_url: str, broker_url: str) -> dict[str, str]:
    """A Celery service on Redis and a real database, with short leases and an hour's
    visibility timeout."""
    return service_env(
        JS_DATABASE_URL=get_settings(database_url=database_url).database_url,
        JS_BROKER_URL=broker_url,
        JS_ALLOW_FREE_ENDPOINTS="true",  # the fake model server is named by api_base
        JS_TASK_VISIBILITY_TIMEOUT_S="3600",
        JS_LEASE_S=str(LEASE_S),
        JS_WORKER_GRACE_S="5",
        JS_SAMPLE_CONCURRENCY="2",
    )


class Service:
    """The module's service on one database: its ``serve`` process (started by the first
    test that needs it), a trainer and an admin key, and the fleet of worker processes."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder = env, folder
        self.url = env["JS_DATABASE_URL"]
        self.fleet = Fleet(env=env, cwd=folder, lease_s=LEASE_S)
        self.server: Server | None = None
        self.trainer = {"Authorization": f"Bearer {make_key(self.url, 'trainer')}"}
        self.admin = {"Authorization": f"Bearer {make_key(self.url, 'admin')}"}

    def up(self, workers: int) -> tuple[Server, list[Worker]]:
        """The server, and exactly ``workers`` idle worker processes (concurrency 1)."""
        if self.server is not None and self.server.proc.poll() is None:
            return self.server, self.fleet.scale(workers)[0]
        log = self.folder / "serve.log"
        pool, [self.server] = self.fleet.scale(
            workers, lambda: Server(env=self.env, cwd=self.folder, log=log)
        )
        return self.server, pool

    def close(self) -> None:
        self.fleet.close()
        if self.server is not None:
            self.server.kill()


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """The module's service on each real database (a copy of the session's migrated one)."""
    folder = tmp_path_factory.mktemp(f"leases-{request.param}")
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            path = folder / "leases.db"
            shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
            url = f"sqlite:///{path}"
        else:
            admin, template = (
                request.getfixturevalue(name) for name in ("postgres_server", "postgres_template")
            )
            url = stack.enter_context(postgres_database(admin, "js_module_", template))
        shared = Service(lease_env(url, BROKER_URL), folder)
        stack.callback(dispose_engines)
        stack.callback(shared.close)
        yield shared


@pytest.fixture
def lease(service: Service, redis_url: str) -> Service:
    """The module's service, on an emptied broker."""
    assert redis_url == BROKER_URL
    return service


def _samples(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}", "prompt": "p", "completion": "c"} for i in range(n)]


def _wait(http: httpx.Client, batch_id: str, limit_s: float, why: object) -> dict:
    body = wait_until(
        lambda: (b := http.get(f"/v1/rewards/{batch_id}").json())["status"] == "done" and b,
        timeout=limit_s,
        interval=0.1,
    )
    assert body, why() if callable(why) else why
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
    def owner() -> str | None:
        with session_scope(url) as session:
            return leases.holder(session=session, batch_id=batch_id)[0]

    held = wait_until(owner, timeout=limit_s)
    assert held, "nobody leased the batch"
    return int(held.split(":")[1])


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


@pytest.mark.parametrize("service", ["postgresql"], indirect=True)
def test_a_message_for_a_done_or_leased_batch_is_acknowledged_and_dropped(
    lease: Service, redis_url: str
):
    """Two worker processes: one scores the batch, the other gets the duplicate message."""
    url = lease.url
    server, pool = lease.up(workers=2)
    settings = get_settings(database_url=url, broker_url=redis_url)
    dispatcher = CeleryDispatcher(settings)
    broker = redis.Redis.from_url(redis_url)

    def log() -> str:  # the pool's whole logs: either process may get a duplicate
        return "".join(w.log_path.read_text(errors="replace") for w in pool)

    try:
        with httpx.Client(base_url=server.url, headers=lease.trainer, timeout=HTTP_S) as http:
            body = {"samples": _samples("s", 40), "judges": SLOW, "wait": False}
            accepted = http.post("/v1/rewards", json=body)
            assert accepted.status_code in (200, 202), accepted.text
            batch_id = accepted.json()["batch_id"]
            _lease_owner_pid(url, batch_id)
            dispatcher.submit(batch_id)  # a duplicate while the first run holds the lease
            first = _wait(http, batch_id, 120, log)
            dispatcher.submit(batch_id)  # and one after it is done
            dropped = f"message for batch {batch_id} dropped"
            assert wait_until(lambda: log().count(dropped) >= 2, timeout=30), log()[-4000:]
            again = http.get(f"/v1/rewards/{batch_id}").json()
    finally:
        dispatcher.close()
    assert f"message for batch {batch_id} dropped: leased" in log()
    assert f"message for batch {batch_id} dropped: done" in log()
    assert again == first  # nothing rescored or rewritten
    assert _results_per_sample(url, batch_id) == [1] * 40
    # the acknowledgement follows the task's return: wait for it, not for the hour's redelivery
    acknowledged = wait_until(
        lambda: broker.llen(QUEUE) == 0 and broker.hlen("unacked") == 0, timeout=30
    )
    assert acknowledged, (broker.llen(QUEUE), broker.hlen("unacked"))  # not kept


def test_a_sigkilled_worker_batch_is_finished_by_another_within_seconds(lease: Service):
    url = lease.url
    server, pool = lease.up(workers=2)
    n = 30
    with httpx.Client(base_url=server.url, headers=lease.trainer, timeout=HTTP_S) as http:
        body = {"samples": _samples("s", n), "judges": SLOW, "wait": False, "timeout_s": 300}
        batch_id = http.post("/v1/rewards", json=body).json()["batch_id"]
        pid = _lease_owner_pid(url, batch_id)
        [holder] = [w for w in pool if pid in pool_pids(w)]
        [other] = [w for w in pool if w is not holder]
        scored = wait_until(
            lambda: http.get(f"/v1/rewards/{batch_id}").json()["progress"]["scored"] >= 3,
            timeout=60,
        )
        assert scored, holder.log()
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


def test_a_batch_whose_message_the_broker_lost_is_redispatched(lease: Service, redis_url: str):
    """One worker process busy with batch A; batch B's message waits in Redis. The Redis
    database is flushed (as a broker restarted without persistence): both messages are
    gone. A is finished by its worker, which still holds it; B is re-sent by a sweeper."""
    url = lease.url
    server, [worker] = lease.up(workers=1)
    broker = redis.Redis.from_url(redis_url)
    with httpx.Client(base_url=server.url, headers=lease.trainer, timeout=HTTP_S) as http:
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


@pytest.mark.parametrize("service", ["postgresql"], indirect=True)
def test_a_sigkilled_pool_process_is_replaced_and_its_batch_finished(lease: Service):
    """Only the pool process dies (the worker's parent lives on and requeues the message,
    which the next process drops while the dead lease lasts): the sweeper re-sends it."""
    url = lease.url
    server, [worker] = lease.up(workers=1)
    with httpx.Client(base_url=server.url, headers=lease.trainer, timeout=HTTP_S) as http:
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


@pytest.mark.parametrize("service", ["postgresql"], indirect=True)
def test_a_mining_job_whose_message_the_broker_lost_is_redispatched(
    lease: Service, redis_url: str, fake: FakeOpenAIServer
):
    """The worker's one slot is busy with a batch; a mining job's message waits in Redis
    behind it. The Redis database is flushed (a broker restarted without persistence):
    once the worker is free, its sweeper finds the job still queued and re-sends it."""
    admin = lease.admin
    server, [worker] = lease.up(workers=1)
    broker = redis.Redis.from_url(redis_url)
    with httpx.Client(base_url=server.url, headers=admin, timeout=HTTP_S) as http:
        http.post("/v1/rubrics", json=RUBRIC).raise_for_status()
        rollouts = {"samples": samples(4), "judges": [llm_judge(fake)], "rubric": RUBRIC["name"]}
        assert http.post("/v1/rewards", json={**rollouts, "run_id": "lost"}).status_code == 200
        busy = {"samples": _samples("a", 24), "judges": SLOW, "wait": False, "timeout_s": 300}
        busy_id = http.post("/v1/rewards", json=busy).json()["batch_id"]
        _lease_owner_pid(lease.url, busy_id)
        queued = http.post(
            f"/v1/rubrics/{RUBRIC['name']}/mine", json={"run_id": "lost", "model": llm_judge(fake)}
        )
        assert queued.status_code == 202, queued.text
        assert broker.llen(QUEUE) == 1  # the job waits: the worker's one slot is taken
        broker.flushdb()
        job = wait_for_job(http, admin, RUBRIC["name"], queued.json()["id"], timeout=120)
    assert job["status"] == "done" and job["result"]["items"], worker.log()
    assert f"re-dispatching mining job {job['id']}" in worker.log()


@pytest.mark.parametrize("service", ["postgresql"], indirect=True)
def test_no_worker_is_a_503_with_retry_after_and_readyz_lists_the_workers(
    tmp_path: Path, lease: Service, migrated_postgres_url: str, redis_url: str, started: list
):
    lease.fleet.scale(0)  # the module's workers would take this test's messages
    env = lease_env(migrated_postgres_url, redis_url)  # a database no worker ever beat in
    key = make_key(env["JS_DATABASE_URL"], "trainer")
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
        pool = pool_pids(worker) - {worker.proc.pid}
        # each process beats at start
        listed = wait_until(lambda: len(found := _ready_workers(http)) >= len(pool) and found)
        assert listed, http.get("/readyz").text
        assert {w["pid"] for w in listed} == pool and len(pool) == 2
        assert all(w["busy"] == 0 and w["id"].split(":")[1] == str(w["pid"]) for w in listed)
        assert http.post("/v1/rewards", json=body).status_code == 200

        worker.kill()  # all gone: listed no more after a lease, refused after the grace
        assert wait_until(
            lambda: http.post("/v1/rewards", json={**body, "wait": False}).status_code == 503,
            timeout=30,
            interval=0.2,
        )
        assert http.get("/readyz").json()["workers"] == []


@pytest.mark.parametrize("service", ["sqlite"], indirect=True)
def test_the_trainer_bridge_waits_out_no_worker(
    tmp_path: Path, lease: Service, migrated_sqlite_url: str, redis_url: str, started: list
):
    """The bridge meets 503 no_worker, retries as Retry-After says, and gets its rewards
    once a worker starts; it knows nothing of workers."""
    lease.fleet.scale(0)  # the module's workers would take this test's messages
    env = lease_env(migrated_sqlite_url, redis_url)  # a database no worker ever beat in
    key = make_key(env["JS_DATABASE_URL"], "trainer")
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
    answers: list[int] = []  # the status of each POST the bridge sends, as it gets it

    class Recording(httpx.AsyncHTTPTransport):
        """The bridge's ordinary transport, noting the status of each answer to a POST."""

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await super().handle_async_request(request)
            if request.method == "POST":
                answers.append(response.status_code)
            return response

    def train_step() -> None:
        client = RewardClient(
            server.url, key, timeout=START_S + HTTP_S, retries=1, transport=Recording()
        )
        got["rewards"] = client.rewards(samples, judges=["reference_match"])
        got["at"] = time.monotonic()

    step = threading.Thread(target=train_step)
    began = time.monotonic()
    step.start()
    assert wait_until(lambda: answers[:1], timeout=HTTP_S) == [503]  # it met no_worker
    assert step.is_alive()  # still waiting, though retries=1: a 503 with Retry-After
    worker_at = time.monotonic()
    started.append(Worker(env=env, cwd=tmp_path, log=tmp_path / "worker.log", concurrency=1))
    step.join(timeout=START_S + HTTP_S)
    assert not step.is_alive()
    assert got["rewards"] == [(1.0, True, 0.0)] * 3
    assert got["at"] > worker_at
    assert answers[-1] in (200, 202) and set(answers[:-1]) == {503}, answers
    waited, worker_after = got["at"] - began, worker_at - began
    print(f"\nbridge waited {waited:.1f} s for a worker (started after {worker_after:.1f} s)")
