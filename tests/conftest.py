"""Shared fixtures: real PostgreSQL, SQLite, Redis, the out-of-tree test plugin, apps."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from fastapi.testclient import TestClient

from judge_service.api.app import create_app
from judge_service.settings import Settings, get_settings
from judge_service.storage.db import dispose_engines, session_scope, upgrade
from judge_service.storage.keys import create_key
from tests.helpers import installed_test_plugin

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS = "redis://127.0.0.1:6379"


@pytest.fixture(scope="session", autouse=True)
def out_of_tree_plugin() -> Iterator[Path]:
    """The tiny out-of-tree plugin package, installed with pip as a user would, into a
    temporary folder on the path of this session and its child processes (never .venv)."""
    with installed_test_plugin() as site:
        yield site


@pytest.fixture(scope="session", autouse=True)
def session_data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A user data directory (``XDG_DATA_HOME``) of the session's own: a command that a test
    runs without ``JS_DATABASE_URL`` uses a default database there, never the user's."""
    home = tmp_path_factory.mktemp("data-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(home))
        yield home


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The admin URL of the real PostgreSQL server (started by .ci/run)."""
    with psycopg.connect(PG_ADMIN, connect_timeout=5) as connection:
        connection.execute("SELECT 1")
    return PG_ADMIN


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    name = f"js_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    dispose_engines()
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'judge.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test using this runs on both real databases, migrated to head."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'judge.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    url = get_settings(database_url=url).database_url
    upgrade(url)
    return url


@pytest.fixture(params=["lean", "litellm"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each test using this runs on both transports of OpenAI-compatible judges."""
    return str(request.param)


@pytest.fixture(autouse=True)
def fresh_model_clients() -> None:
    """No model client (and so no verdict cache) outlives its test: the same sample judged
    by the same fake model in an earlier test, or on the other database, would otherwise be
    a cache hit that never reaches the fake server."""
    from judge_service import llm

    llm._CLIENTS.clear()


@pytest.fixture
def settings_on_every_backend(database_url: str, transport: str) -> Settings:
    """Embedded settings on each database and each transport of OpenAI-compatible judges:
    a module whose ``embedded_settings`` returns this runs every test four times."""
    return get_settings(
        database_url=database_url, broker_url=None, cache_url=None, openai_transport=transport
    )


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis database number of its own, emptied before and after.

    ``JS_TEST_REDIS_DB`` picks another number, so two checkouts can run their suites at once."""
    db = int(os.environ.get("JS_TEST_REDIS_DB", "9"))
    client = redis.Redis.from_url(f"{REDIS}/{db}")
    client.flushdb()
    yield f"{REDIS}/{db}"
    client.flushdb()


def make_key(url: str, role: str) -> str:
    with session_scope(url) as session:
        return create_key(session=session, role=role)[1]


@pytest.fixture
def embedded_settings(sqlite_url: str) -> Settings:
    settings = get_settings(database_url=sqlite_url, broker_url=None, cache_url=None)
    upgrade(settings.database_url)
    return settings


@pytest.fixture
def client(embedded_settings: Settings) -> Iterator[TestClient]:
    """The embedded app (SQLite, in-process executor) behind a test client."""
    with TestClient(create_app(embedded_settings)) as test_client:
        yield test_client


@pytest.fixture
def keys(embedded_settings: Settings) -> dict[str, str]:
    """One key per role, as Authorization headers."""
    url = embedded_settings.database_url
    return {
        role: {"Authorization": f"Bearer {make_key(url, role)}"}  # type: ignore[misc]
        for role in ("trainer", "reviewer", "admin")
    }


from tests.fakes import fake, fake_openai, server  # noqa: E402, F401  (fixtures: the fault-injecting fake server)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The chaos suite's figures (tests/test_chaos.py), in the output even without ``-s``."""
    from tests.chaos_support import figures_file, summary_lines

    lines = summary_lines()
    if lines:
        terminalreporter.section("chaos figures")
        for line in lines:
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"(also appended to {figures_file()})")
