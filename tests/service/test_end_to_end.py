"""From outside, like a user: real `judge-service` processes, embedded and with Celery."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.helpers import JUDGE_SERVICE, Server, Worker, create_key, run_cli, service_env


def _score_scenario(url: str, key: str) -> None:
    """The checks of the foundation issue's 'done when', against a running service."""
    headers = {"Authorization": f"Bearer {key}"}
    samples = [
        {"id": "right", "prompt": "2+2?", "completion": "The answer is 4", "reference": "4"},
        {"id": "wrong", "prompt": "2+2?", "completion": "5", "reference": "4"},
        {
            "id": "chat",
            "prompt": [{"role": "user", "content": "2+2?"}],
            "completion": [{"role": "assistant", "content": "The answer is 4"}],
            "reference": "4",
        },
    ]
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        done = http.post("/v1/rewards", json={"samples": samples, "judges": ["reference_match"]})
        assert done.status_code == 200, done.text
        results = done.json()["results"]
        assert [r["id"] for r in results] == ["right", "wrong", "chat"]
        right, wrong, chat = (r["reward"] for r in results)
        assert right > wrong
        assert chat == right

        body = {
            "samples": samples,
            "judges": ["reference_match"],
            "wait": False,
            "idempotency_key": "e2e-1",
        }
        accepted = http.post("/v1/rewards", json=body)
        assert accepted.status_code in (200, 202)
        batch_id = accepted.json()["batch_id"]
        deadline = time.monotonic() + 60
        while http.get(f"/v1/rewards/{batch_id}").json()["status"] != "done":
            assert time.monotonic() < deadline, "polling never reached done"
            time.sleep(0.1)
        polled = http.get(f"/v1/rewards/{batch_id}")
        assert polled.status_code == 200
        assert [r["reward"] for r in polled.json()["results"]] == [right, wrong, chat]
        assert http.post("/v1/rewards", json=body).json()["batch_id"] == batch_id


def test_embedded_server(tmp_path: Path):
    env = service_env(JS_DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.db'}")
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    key = create_key("admin", env=env, cwd=tmp_path)
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        ready = httpx.get(f"{server.url}/readyz").json()
        assert ready["checks"] == {"database": "ok", "queue": "ok", "workers": "ok"}
        assert [w["pid"] for w in ready["workers"]] == [server.proc.pid]  # its own worker
        _score_scenario(server.url, key)
    finally:
        server.kill()


@pytest.fixture
def celery_env(tmp_path: Path, postgres_url: str, redis_url: str) -> dict[str, str]:
    env = service_env(
        JS_DATABASE_URL=postgres_url.replace("postgresql://", "postgresql+psycopg://"),
        JS_BROKER_URL=redis_url,
        JS_TASK_VISIBILITY_TIMEOUT_S="3",
    )
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    return env


def test_celery_workers_on_postgres(tmp_path: Path, celery_env: dict[str, str]):
    key = create_key("trainer", env=celery_env, cwd=tmp_path)
    worker = Worker(env=celery_env, cwd=tmp_path, log=tmp_path / "worker.log")
    server = Server(env=celery_env, cwd=tmp_path, log=tmp_path / "serve.log")
    try:
        assert httpx.get(f"{server.url}/readyz").json()["status"] == "ready"
        _score_scenario(server.url, key)
    finally:
        server.kill()
        worker.kill()


def test_worker_killed_mid_batch_loses_nothing(tmp_path: Path, celery_env: dict[str, str]):
    """SIGKILL a worker mid-batch; another finishes it with exactly one result per sample."""
    env = {**celery_env, "JS_SAMPLE_CONCURRENCY": "2"}
    key = create_key("trainer", env=env, cwd=tmp_path)
    server = Server(env=env, cwd=tmp_path, log=tmp_path / "serve.log")
    first = Worker(env=env, cwd=tmp_path, log=tmp_path / "worker1.log")
    n = 24
    samples = [{"id": f"s{i}", "prompt": "p", "completion": "c"} for i in range(n)]
    judges = [{"name": "slow_constant", "score": 0.5, "delay_s": 0.25}]
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
            accepted = http.post(
                "/v1/rewards",
                json={"samples": samples, "judges": judges, "wait": False, "timeout_s": 300},
            )
            batch_id = accepted.json()["batch_id"]
            deadline = time.monotonic() + 60
            while http.get(f"/v1/rewards/{batch_id}").json()["progress"]["scored"] < 4:
                assert time.monotonic() < deadline, first.log()
                time.sleep(0.05)
            first.kill()  # SIGKILL to the worker's whole process group
            scored_at_kill = http.get(f"/v1/rewards/{batch_id}").json()["progress"]["scored"]
            assert 0 < scored_at_kill < n
            second = Worker(env=env, cwd=tmp_path, log=tmp_path / "worker2.log")
            try:
                deadline = time.monotonic() + 120
                while (body := http.get(f"/v1/rewards/{batch_id}").json())["status"] != "done":
                    assert time.monotonic() < deadline, second.log()
                    time.sleep(0.2)
            finally:
                second.kill()
        assert [r["id"] for r in body["results"]] == [s["id"] for s in samples]
        assert all(r["valid"] and r["reward"] == 0.5 for r in body["results"])
        url = env["JS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(url) as connection:
            rows = connection.execute(
                "SELECT s.external_id, count(r.id) FROM samples s LEFT JOIN results r "
                "ON r.sample_id = s.id WHERE s.batch_id = %s GROUP BY s.external_id",
                (batch_id,),
            ).fetchall()
        assert len(rows) == n
        assert {count for _, count in rows} == {1}
    finally:
        server.kill()
        first.kill()


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_a_two_process_worker_scores_every_sample_exactly_once(
    tmp_path: Path, celery_env: dict[str, str]
):
    """``worker --concurrency 2 --pool prefork``: two processes score three batches at once,
    and the first batch's task is delivered twice (as after a redelivery): the second delivery
    is dropped (the batch is leased or done), and every sample ends with exactly one result.
    The worker's ``--metrics-port`` counts what its processes scored (the parent scores
    nothing)."""
    from judge_service.core.settings import get_settings
    from judge_service.core.worker.dispatch import CeleryDispatcher
    from tests.helpers import free_port

    key = create_key("trainer", env=celery_env, cwd=tmp_path)
    metrics_port = free_port()
    temp = tmp_path / "temp"  # the worker's shared counters go here, not into /tmp (issue 37)
    temp.mkdir()
    worker = Worker(
        env={**celery_env, "TMPDIR": str(temp)},
        cwd=tmp_path,
        log=tmp_path / "worker.log",
        concurrency=2,
        pool="prefork",
        metrics_port=metrics_port,
    )
    server = Server(env=celery_env, cwd=tmp_path, log=tmp_path / "serve.log")
    judges = [{"name": "slow_constant", "score": 0.5, "delay_s": 0.1}]
    n = 16
    try:
        assert len(_children(worker.proc.pid)) == 2, worker.log()
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
            ids = []
            for b in range(3):
                samples = [{"id": f"b{b}s{i}", "prompt": "p", "completion": "c"} for i in range(n)]
                body = {"samples": samples, "judges": judges, "wait": False, "timeout_s": 120}
                ids.append(http.post("/v1/rewards", json=body).json()["batch_id"])
            settings = get_settings(
                database_url=celery_env["JS_DATABASE_URL"], broker_url=celery_env["JS_BROKER_URL"]
            )
            dispatcher = CeleryDispatcher(settings)
            dispatcher.submit(ids[0])  # a second delivery of the first batch
            dispatcher.close()
            deadline = time.monotonic() + 120
            for batch_id in ids:
                while (body := http.get(f"/v1/rewards/{batch_id}").json())["status"] != "done":
                    assert time.monotonic() < deadline, worker.log()
                    time.sleep(0.1)
                assert len(body["results"]) == n
                assert all(r["valid"] and r["reward"] == 0.5 for r in body["results"])
        metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
        scored = re.search(r'judge_service_samples_scored_total\{outcome="valid"\} (\S+)', metrics)
        assert scored is not None and float(scored.group(1)) >= 3 * n, metrics
        assert any(p.name.startswith("judge-service-metrics-") for p in temp.iterdir())
        url = celery_env["JS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(url) as connection:
            counts = connection.execute(
                "SELECT count(r.id) FROM samples s LEFT JOIN results r ON r.sample_id = s.id "
                "GROUP BY s.id"
            ).fetchall()
        assert len(counts) == 3 * n
        assert {count for (count,) in counts} == {1}
    finally:
        server.kill()
        worker.kill()


def test_serve_refuses_several_processes_on_sqlite(tmp_path: Path):
    env = service_env(JS_DATABASE_URL=f"sqlite:///{tmp_path / 'one.db'}")
    done = subprocess.run(
        [JUDGE_SERVICE, "serve", "--workers", "2"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "--workers" in done.stderr and "PostgreSQL" in done.stderr


def test_two_api_processes_on_postgres(tmp_path: Path, celery_env: dict[str, str]):
    """``serve --workers 2``: two API processes share the port, PostgreSQL and the broker."""
    key = create_key("trainer", env=celery_env, cwd=tmp_path)
    worker = Worker(env=celery_env, cwd=tmp_path, log=tmp_path / "worker.log")
    server = Server(env=celery_env, cwd=tmp_path, log=tmp_path / "serve.log", workers=2)
    try:
        assert len(_children(server.proc.pid)) >= 2, server.log()
        _score_scenario(server.url, key)
    finally:
        server.kill()
        worker.kill()
