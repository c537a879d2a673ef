"""Engines, sessions and migrations. One engine per database URL per process."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.orm import Session, sessionmaker

_engines: dict[str, Engine] = {}
_no_wait: dict[str, Connection] = {}
#: Seconds to wait for a PostgreSQL connection (unless the URL sets ``connect_timeout``).
CONNECT_TIMEOUT_S = 10
_lock = threading.Lock()
#: How long a SQLite statement waits for another writer's lock before it fails.
BUSY_TIMEOUT_MS = 30_000


def _sqlite_pragmas(dbapi_connection, _record, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    """WAL lets the API read while the embedded executor writes; wait on locks, don't fail."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; None for other databases and in-memory ones."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):  # a URI (uri=true): SQLite reads it, not us
        return None
    return Path(database)


def describe_url(url: str) -> str:
    """The URL for a log line: the file of a SQLite database, the password hidden otherwise."""
    path = sqlite_path(url)
    if path is not None:
        return f"SQLite file {path.absolute()}"
    return make_url(url).render_as_string(hide_password=True)


def get_engine(url: str) -> Engine:
    """The process-wide engine for ``url``, created on first use.

    A SQLite file's folder is made if missing (the default one lives in the user's data
    directory, which may not exist yet on a new machine)."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            if url.startswith("sqlite"):
                path = sqlite_path(url)
                if path is not None:
                    # a folder that cannot be made surfaces as SQLite's own "unable to open
                    # database file" on connect, which callers know as an outage
                    with contextlib.suppress(OSError):
                        path.parent.mkdir(parents=True, exist_ok=True)
                engine = _sqlite_engine(url, BUSY_TIMEOUT_MS)
            else:
                # pre-ping: connections pooled before an outage are replaced, not used, once
                # the server is back; a bounded connect keeps a black-holed host from
                # hanging requests and start-up
                connect_args = (
                    {}
                    if "connect_timeout" in make_url(url).query
                    else {"connect_timeout": CONNECT_TIMEOUT_S}
                )
                engine = create_engine(
                    url,
                    pool_pre_ping=True,
                    pool_size=10,
                    max_overflow=20,
                    connect_args=connect_args,
                )
            _engines[url] = engine
        return engine


def _sqlite_engine(url: str, busy_timeout_ms: int) -> Engine:
    """An engine on a SQLite file, its connections set up by :func:`_sqlite_pragmas`."""
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000}
    )
    pragmas = functools.partial(_sqlite_pragmas, busy_timeout_ms=busy_timeout_ms)
    event.listen(engine, "connect", pragmas)
    return engine


def no_wait_connection(url: str) -> Connection:
    """A connection to the SQLite file ``url``, kept open, whose statements fail at once on
    a lock that another connection holds (busy timeout 0) instead of waiting for it.

    For one thread that must never wait, the event loop's (``episodes.store_play_now``), used
    under a mutex. Why not a pooled connection: checking one out and in, and setting its
    busy timeout there and back, cost ~0.1 ms of an episode step of ~1 ms."""
    with _lock:
        connection = _no_wait.get(url)
        if connection is None or connection.closed or connection.invalidated:
            connection = _no_wait[url] = _sqlite_engine(url, busy_timeout_ms=0).connect()
        return connection


def dispose_engines() -> None:
    """Close every pooled connection (tests, and after a fork)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
        for connection in _no_wait.values():
            connection.close()
            connection.engine.dispose()
        _no_wait.clear()


def forget_engines_after_fork() -> None:
    """In a forked child (a prefork worker process): drop the engines made before the fork
    without closing their connections, which are the parent's; the child opens its own."""
    with _lock:
        for engine in _engines.values():
            engine.dispose(close=False)
        _engines.clear()


def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(get_engine(url), expire_on_commit=False)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    session = session_factory(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str) -> Config:
    """Alembic configured from the installed package, whatever the working directory."""
    config = Config()
    config.set_main_option("script_location", str(files("judge_service_migrations")))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database schema to ``revision``."""
    config = alembic_config(url)
    with get_engine(url).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


#: Alembic's table of the revision a database is at (its default name; env.py keeps it).
VERSION_TABLE = "alembic_version"


@functools.cache
def _head() -> str | None:
    """The newest migration shipped with the package (read once: it cannot change while the
    process runs)."""
    return ScriptDirectory(str(files("judge_service_migrations"))).get_current_head()


def schema_is_current(url: str) -> bool:
    """True when the database is at the newest migration.

    The revision is read from its table, not through alembic's ``MigrationContext``, which
    logs two INFO lines each time it is made: ``/readyz`` asks on every probe."""
    with get_engine(url).connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return False
        stamped = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}"))
        return list(stamped.scalars()) == [_head()]


def schema_problem(url: str) -> str | None:
    """Why the database at ``url`` cannot be used yet, or None when its schema is at head.

    A missing SQLite file is reported without opening it, which would leave an empty
    database behind."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return f"there is no database yet at {path.absolute()}"
    if not schema_is_current(url):
        return f"the database is not at the newest schema ({describe_url(url)})"
    return None
