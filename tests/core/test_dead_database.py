"""A database that cannot be reached is a 503 with Retry-After, never a 500; ``serve`` waits
for it and recovers without a restart; the CLI says what failed in one line and exits 2.

"Down" is real: a port where nothing listens, a private PostgreSQL stopped and started (the
shared one on 5432 is never touched), a SQLite path that cannot be opened.
"""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from judge_service.core.api.app import create_app
from judge_service.core.settings import get_settings
from judge_service.core.storage.db import dispose_engines, upgrade
from judge_service.core.storage.outage import find_outage
from tests.conftest import make_key
from tests.helpers import JUDGE_SERVICE, Server, free_port, service_env, wait_until
from tests.private_postgres import PrivatePostgres, private_postgres

GOOD = {
    "samples": [{"id": "a", "prompt": "2+2?", "completion": "4", "reference": "4"}],
    "judges": ["reference_match"],
}
PASSWORD = "s3cret-pw"


def dead_postgres_url() -> str:
    """A PostgreSQL URL, with a password, on a port where nothing listens."""
    return f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/judge"


def assert_database_unavailable(response: httpx.Response) -> dict:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) > 0
    error = response.json()["error"]
    assert error["code"] == "database_unavailable"
    assert error["message"]
    assert PASSWORD not in response.text
    return error


def assert_unavailable_page(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) > 0
    assert response.headers["content-type"].startswith("text/html")
    assert "The database is unavailable" in response.text
    assert "database_unavailable" in response.text


@pytest.fixture
def pg() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        yield server
    dispose_engines()


# --- the API ----------------------------------------------------------------------------


def _every_route_answers_503(client: TestClient, key: str) -> None:
    bearer = {"Authorization": f"Bearer {key}"}
    assert_database_unavailable(client.post("/v1/rewards", json=GOOD, headers=bearer))
    assert_database_unavailable(client.get("/v1/rewards/b_missing", headers=bearer))
    assert_database_unavailable(
        client.post(f"/get_reward?api_key={key}", json={"query": ["4"], "labels": ["4"]})
    )
    assert_database_unavailable(client.get("/v1/rubrics", headers=bearer))
    assert_unavailable_page(client.post("/review/login", data={"key": key}))
    assert_unavailable_page(client.get("/review", headers=bearer))
    assert_unavailable_page(client.get("/runs", headers=bearer))
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["checks"]["database"].startswith("unreachable")
    assert client.get("/healthz").status_code == 200


def test_unreachable_postgres_is_503_on_every_route(caplog: pytest.LogCaptureFixture):
    settings = get_settings(database_url=dead_postgres_url(), broker_url=None, cache_url=None)
    with TestClient(create_app(settings)) as client:  # starts although the database is down
        _every_route_answers_503(client, "js_some_key")
    assert PASSWORD not in caplog.text
    assert "connection refused" in caplog.text


def test_an_unopenable_sqlite_file_is_503(tmp_path: Path):
    folder = tmp_path / "judge.db"
    folder.mkdir()  # a directory where the file should be: SQLite cannot open it
    settings = get_settings(database_url=f"sqlite:///{folder}", broker_url=None, cache_url=None)
    with TestClient(create_app(settings)) as client:
        _every_route_answers_503(client, "js_some_key")
        error = assert_database_unavailable(
            client.get("/v1/rubrics", headers={"Authorization": "Bearer js_some_key"})
        )
    assert error["detail"] == {"reason": "unable to open database file"}


def test_a_database_bug_stays_500(migrated_sqlite_url: str):
    """A missing table is a bug (or a broken migration), not an outage: 500, no Retry-After."""
    with create_engine(migrated_sqlite_url).begin() as connection:
        connection.execute(text("DROP TABLE api_keys"))
    settings = get_settings(database_url=migrated_sqlite_url, broker_url=None, cache_url=None)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        response = client.post("/v1/rewards", json=GOOD, headers={"Authorization": "Bearer js_x"})
        assert client.get("/readyz").status_code == 200  # the database itself answers
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    assert "retry-after" not in response.headers


def test_a_sqlite_file_locked_past_its_timeout_is_an_outage(tmp_path: Path):
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0.2})
    try:
        with pytest.raises(OperationalError) as raised, engine.begin() as connection:
            connection.execute(text("INSERT INTO t VALUES (1)"))
        outage = find_outage(raised.value)
        assert outage is not None
        assert outage.reason == "database is locked"
        holder.execute("COMMIT")
        with pytest.raises(OperationalError) as bug, engine.connect() as connection:
            connection.execute(text("SELECT * FROM no_such_table"))
        assert find_outage(bug.value) is None
    finally:
        holder.close()
        engine.dispose()


def test_postgres_stopped_and_started_under_a_running_app(pg: PrivatePostgres):
    """503 while it is down, then the same app (same pool) works again: pre-ping."""
    pg.start()
    url = get_settings(database_url=pg.create_database("judge")).database_url
    upgrade(url)
    key = make_key(url, "trainer")
    settings = get_settings(database_url=url, broker_url=None, cache_url=None, key_cache_s=0)
    bearer = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(settings)) as client:
        first = client.post("/v1/rewards", json=GOOD, headers=bearer)
        assert first.status_code == 200, first.text
        batch_id = first.json()["batch_id"]
        pg.stop()
        assert_database_unavailable(client.post("/v1/rewards", json=GOOD, headers=bearer))
        assert_database_unavailable(client.get(f"/v1/rewards/{batch_id}", headers=bearer))
        assert client.get("/readyz").status_code == 503
        pg.start()
        again = client.get(f"/v1/rewards/{batch_id}", headers=bearer)
        assert again.status_code == 200, again.text
        assert again.json()["results"][0]["reward"] == 1.0
        assert client.post("/v1/rewards", json=GOOD, headers=bearer).status_code == 200
        assert client.get("/readyz").status_code == 200


# --- serve ------------------------------------------------------------------------------


def _wait_ready(url: str, timeout: float = 60, *, check: str | None = None) -> httpx.Response:
    """``/readyz`` once ready, or once its ``check`` alone is ok; the last answer at timeout."""
    deadline = time.monotonic() + timeout
    while True:
        ready = httpx.get(f"{url}/readyz", timeout=15)
        done = ready.json()["checks"].get(check) == "ok" if check else ready.status_code == 200
        if done or time.monotonic() > deadline:
            return ready
        time.sleep(0.3)


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [JUDGE_SERVICE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("migrate", ["default", "--no-migrate"])
def test_serve_waits_for_postgres_then_works_without_a_restart(
    tmp_path: Path, pg: PrivatePostgres, migrate: str
):
    url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{pg.port}/judge"
    env = service_env(JS_DATABASE_URL=url, JS_KEY_CACHE_S="0")
    args = ["--no-migrate"] if migrate == "--no-migrate" else []
    server = Server(
        env=env, cwd=tmp_path, log=tmp_path / "serve.log", timeout=180, extra_args=args
    )  # a long start-up timeout: the shared test machine is busy
    try:
        assert httpx.get(f"{server.url}/readyz", timeout=15).status_code == 503
        answer = httpx.post(
            f"{server.url}/v1/rewards", json=GOOD, headers={"Authorization": "Bearer js_k"}
        )
        assert_database_unavailable(answer)
        log = server.log()
        assert log.count("cannot reach the database at") == 1, log
        assert "(connection refused): start PostgreSQL or set JS_DATABASE_URL" in log
        assert PASSWORD not in log
        assert "Traceback" not in log

        pg.start()
        pg.create_database("judge")
        if migrate == "--no-migrate":  # nobody migrates: not ready, and says why
            answers: list[httpx.Response] = []

            def says_why() -> bool:
                answers.append(httpx.get(f"{server.url}/readyz", timeout=15))
                return "schema is not current" in answers[-1].json()["checks"]["database"]

            assert wait_until(says_why, timeout=60, interval=0.1), answers[-1].text
            assert answers[-1].status_code == 503
            done = _cli("db", "upgrade", env=env, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        ready = _wait_ready(server.url)
        assert ready.status_code == 200, (ready.text, server.log())
        made = _cli("keys", "create", "--role", "trainer", env=env, cwd=tmp_path)
        assert made.returncode == 0, made.stderr
        key = made.stdout.strip().splitlines()[-1]
        scored = httpx.post(
            f"{server.url}/v1/rewards",
            json=GOOD,
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        assert scored.status_code == 200, scored.text
        assert scored.json()["results"][0]["reward"] == 1.0
        assert server.proc.poll() is None
    finally:
        server.kill()


def test_two_api_processes_migrate_once_the_database_is_back(
    tmp_path: Path, pg: PrivatePostgres, redis_url: str
):
    """``serve --workers 2 --migrate``: the supervisor waits for PostgreSQL, then migrates."""
    url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{pg.port}/judge"
    env = service_env(JS_DATABASE_URL=url, JS_BROKER_URL=redis_url)
    server = Server(
        env=env,
        cwd=tmp_path,
        log=tmp_path / "serve.log",
        timeout=180,  # two spawned processes import the service: slow on a busy machine
        workers=2,
        extra_args=["--migrate"],
    )
    try:
        ready = httpx.get(f"{server.url}/readyz", timeout=15)
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"] == "unreachable: connection refused"
        log = server.log()
        assert log.count("cannot reach the database at") == 1, log
        assert PASSWORD not in log
        pg.start()
        pg.create_database("judge")
        # No Celery worker runs here, so /readyz stays 503 on its workers check alone.
        ready = _wait_ready(server.url, check="database")
        assert ready.json()["checks"]["database"] == "ok", (ready.text, server.log())
        assert ready.json()["checks"]["workers"].startswith("no worker heartbeat")
        # the seed rubrics are imported after the schema
        assert wait_until(lambda: "the database is back" in server.log(), 30), server.log()
    finally:
        server.kill()


# --- the CLI ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [("db", "upgrade"), ("keys", "create", "--role", "trainer"), ("rubrics", "list")],
)
def test_cli_says_what_failed_in_one_line_and_exits_2(tmp_path: Path, command: tuple[str, ...]):
    url = dead_postgres_url()
    env = service_env(JS_DATABASE_URL=url)
    done = _cli(*command, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    port = url.rsplit(":", 1)[1].split("/")[0]
    assert lines[0].startswith(
        f"error: cannot reach the database at postgresql+psycopg://postgres:***@127.0.0.1:{port}"
        "/judge (connection refused): start PostgreSQL or set JS_DATABASE_URL"
    ), lines[0]
    assert PASSWORD not in done.stdout + done.stderr

    verbose = _cli("-v", *command, env=env, cwd=tmp_path)
    assert verbose.returncode == 2
    assert "Traceback (most recent call last)" in verbose.stderr
    assert "OperationalError" in verbose.stderr
    assert verbose.stderr.strip().splitlines()[-1].startswith("error: cannot reach the database")
    assert PASSWORD not in verbose.stdout + verbose.stderr


def test_cli_names_an_unopenable_sqlite_file(tmp_path: Path):
    folder = tmp_path / "judge.db"
    folder.mkdir()
    done = _cli(
        "db", "upgrade", env=service_env(JS_DATABASE_URL=f"sqlite:///{folder}"), cwd=tmp_path
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: cannot use the database in the SQLite file {folder} (unable to open database "
        "file): check that the path is a file you may read and write, or set JS_DATABASE_URL "
        "(`judge-service -v ...` shows the traceback)"
    )
