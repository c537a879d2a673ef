"""Shared fixtures: real PostgreSQL, SQLite, Redis, the out-of-tree test plugin, apps."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from fastapi.testclient import TestClient

from judge_service.core.api.app import create_app
from judge_service.core.settings import Settings, get_settings
from judge_service.core.storage.db import (
    get_engine,
    session_scope,
    sqlite_path,
    upgrade,
)
from judge_service.core.storage.keys import create_key
from tests.helpers import installed_test_plugin, postgres_database

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS = "redis://127.0.0.1:6379"

# scripts/test.sh runs the suite in two pytest-xdist workers (gw0, gw1): each takes a Redis
# database of its own (JS_TEST_REDIS_DB, 9 by default, plus its number), so that one worker's
# flush or Celery queue never meets the other's. Everything else a test makes is its own already
# (databases, ports, temporary folders).
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _XDIST_WORKER.startswith("gw"):
    _first = int(os.environ.get("JS_TEST_REDIS_DB", "9"))
    os.environ["JS_TEST_REDIS_DB"] = str(_first + int(_XDIST_WORKER[2:]))


@pytest.fixture(scope="session", autouse=True)
def session_temp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The temporary folder of this process and of every child it starts (servers, workers,
    compilers, Chromium), under pytest's own: the suite leaves nothing in the system's."""
    folder = tmp_path_factory.mktemp("tmp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(folder))
        patch.setattr(tempfile, "tempdir", str(folder))
        yield folder


@pytest.fixture(scope="session", autouse=True)
def out_of_tree_plugin(session_temp: Path) -> Iterator[Path]:
    """The tiny out-of-tree plugin package, installed with pip as a user would, into a
    folder of the user's cache (once per version of its source, then reused) on the path of
    this session and its child processes (never .venv)."""
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


def _migrate_and_close(url: str) -> None:
    """Alembic ``upgrade`` to head, as the service does, then close the pooled connections:
    PostgreSQL refuses to copy a template that anyone is connected to, and a SQLite file is
    copied whole only once its write-ahead log is folded back in (on the last close)."""
    url = get_settings(database_url=url).database_url
    upgrade(url)
    get_engine(url).dispose()


@pytest.fixture(scope="session")
def postgres_template(postgres_server: str) -> Iterator[str]:
    """The name of a PostgreSQL database migrated to head once per session (the
    ``alembic_version`` row included): each ``migrated_postgres_url`` is a copy of it, which
    is much quicker than running every migration again. Dropped at the end of the session."""
    with postgres_database(postgres_server, "js_template_") as url:
        _migrate_and_close(url)
        yield url.rsplit("/", 1)[1]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head once per session; ``migrated_sqlite_url`` copies it."""
    path = tmp_path_factory.mktemp("template") / "judge.db"
    _migrate_and_close(f"sqlite:///{path}")
    assert not path.with_name(path.name + "-wal").exists(), "the template is not closed"
    return path


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with postgres_database(postgres_server, "js_test_") as url:
        yield url


@pytest.fixture
def migrated_postgres_url(postgres_server: str, postgres_template: str) -> Iterator[str]:
    """A PostgreSQL database for one test, already at the newest schema: a copy of the
    session's migrated template (``CREATE DATABASE ... TEMPLATE``), dropped afterwards.

    For a test that would otherwise migrate ``postgres_url`` itself and is not about
    migrations; tests of migrations, ``db upgrade`` and ``serve --migrate`` migrate for real."""
    with postgres_database(postgres_server, "js_test_", template=postgres_template) as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """The URL of a SQLite file that does not exist yet."""
    return f"sqlite:///{tmp_path / 'judge.db'}"


@pytest.fixture
def migrated_sqlite_url(sqlite_url: str, sqlite_template: Path) -> str:
    """``sqlite_url`` (the same file), already at the newest schema: a copy of the session's
    migrated template. For a test that would otherwise run ``upgrade(sqlite_url)`` and is not
    about migrations."""
    path = sqlite_path(sqlite_url)
    assert path is not None and not path.exists()
    shutil.copyfile(sqlite_template, path)
    return sqlite_url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs on both real databases, at the newest schema (copies of
    the session's migrated templates)."""
    if request.param == "sqlite":
        url = request.getfixturevalue("migrated_sqlite_url")
    else:
        url = request.getfixturevalue("migrated_postgres_url")
    return get_settings(database_url=url).database_url


@pytest.fixture(params=["lean", "litellm"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each test using this runs on both transports of OpenAI-compatible judges."""
    return str(request.param)


@pytest.fixture(autouse=True)
def fresh_model_clients() -> None:
    """No model client (and so no verdict cache) outlives its test: the same sample judged
    by the same fake model in an earlier test, or on the other database, would otherwise be
    a cache hit that never reaches the fake server."""
    from judge_service.judging.client import forget_clients

    forget_clients()


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
def embedded_settings(migrated_sqlite_url: str) -> Settings:
    return get_settings(database_url=migrated_sqlite_url, broker_url=None, cache_url=None)


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

#: The files that take longest (``--durations``; docs/benchmarks.md), slowest first. They run
#: first, so that the two workers finish together instead of one waiting out the last of them.
SLOW_FILES_FIRST = (
    "test_chaos.py",
    "test_worker_leases.py",
    "test_forge_cli.py",
    "test_fuzz_api.py",
    "test_end_to_end.py",
    "test_clean_stop.py",
    "test_forge_loop.py",
    "test_judge_panel_api.py",
    "test_review_loop.py",
    "test_wheel_install.py",
    "test_local_build.py",
    "test_dead_database.py",
    "test_cli.py",
    "test_audit_cli.py",
    "test_run_page.py",
    "test_trainer_episodes.py",
    "test_world_episodes_api.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow files first, the rest in their usual order (a stable sort keeps each file's
    tests together; scripts/test.sh tells xdist to keep this order)."""
    rank = {name: n for n, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


#: The chaos figures that xdist's workers sent back (``workeroutput``), for the summary.
_FIGURES_FROM_WORKERS: list[str] = []


class _FiguresFromWorkers:
    """Collects each xdist worker's chaos figures as it finishes (xdist's own hook, so the
    class is registered only where xdist runs)."""

    def pytest_testnodedown(self, node: object, error: object) -> None:
        _FIGURES_FROM_WORKERS.extend(getattr(node, "workeroutput", {}).get("chaos_figures", []))


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_FiguresFromWorkers(), "chaos-figures-from-workers")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands its chaos figures to the controller, which prints the summary."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["chaos_figures"] = _figure_lines()


def _figure_lines() -> list[str]:
    """This process's chaos figures and where they were appended (none if it ran no chaos)."""
    from tests.chaos_support import figures_file, summary_lines

    lines = summary_lines()
    return [*lines, f"(also appended to {figures_file()})"] if lines else []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The chaos suite's figures (tests/service/test_chaos.py), in the output even without
    ``-s``."""
    lines = _figure_lines() + _FIGURES_FROM_WORKERS
    if lines:
        terminalreporter.section("chaos figures")
        for line in lines:
            terminalreporter.write_line(line)
