"""Telling a database that cannot be reached from a bug.

An outage (PostgreSQL down or refusing connections, a SQLite file that cannot be opened or
stays locked past its busy timeout) passes: the API answers 503 with ``Retry-After``, the
CLI prints one line and exits 2, ``serve`` waits for it. Anything else a query raises (a
missing table, a constraint, bad SQL) is a bug and keeps its 500 and its traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import exc as sa_exc

from judge_service.core.storage.db import describe_url, sqlite_path

#: SQLite's messages for a file it cannot use now; its other OperationalErrors ("no such
#: table", syntax) are bugs. Matched on the message: sqlite3 has no error codes before 3.11.
SQLITE_OUTAGES = (
    "database is locked",
    "unable to open database file",
    "disk i/o error",
    "attempt to write a readonly database",
)

#: PostgreSQL SQLSTATEs of a server that is going away or full: the class 08 (connection
#: exceptions) and these.
POSTGRES_OUTAGES = frozenset({"57P01", "57P02", "57P03", "53300"})


@dataclass(frozen=True)
class Outage:
    """Why the database could not be used: the driver's words, short (``connection refused``)."""

    reason: str
    sqlite: bool


def _short_reason(message: str) -> str:
    """The driver's first line without its prefixes: psycopg writes ``connection failed:
    connection to server at "127.0.0.1", port 5433 failed: Connection refused``."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    reason = first.rsplit(": ", 1)[-1].strip().removeprefix("FATAL:").strip()
    return (reason or "no reason given").rstrip(".").lower()


def _classify(error: BaseException) -> Outage | None:
    if isinstance(error, sa_exc.TimeoutError):  # the pool waited for a connection in vain
        return Outage("no free connection in the pool", sqlite=False)
    if not isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError):
        return None
    orig = error.orig
    message = str(orig)
    if type(orig).__module__.startswith("sqlite3"):
        lowered = message.lower()
        for known in SQLITE_OUTAGES:
            if known in lowered:
                return Outage(known, sqlite=True)
        return None
    if error.connection_invalidated:  # SQLAlchemy saw a disconnect mid-query
        return Outage(_short_reason(message), sqlite=False)
    sqlstate = getattr(orig, "sqlstate", None)
    if error.statement is None or sqlstate is None:
        # raised while connecting (no statement yet), or by the client library itself
        # (no server error code): the server was not reached or dropped us
        return Outage(_short_reason(message), sqlite=False)
    if sqlstate.startswith("08") or sqlstate in POSTGRES_OUTAGES:
        return Outage(_short_reason(message), sqlite=False)
    return None


def find_outage(error: BaseException) -> Outage | None:
    """The outage behind ``error`` (or behind what it was raised from), else None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        outage = _classify(current)
        if outage is not None:
            return outage
        current = current.__cause__ or current.__context__
    return None


def _hint(outage: Outage) -> str:
    reason = outage.reason
    if outage.sqlite:
        if reason == "database is locked":
            return "another process holds a lock on it; stop that process or try again"
        return "check that the path is a file you may read and write, or set JS_DATABASE_URL"
    if "password" in reason or "authentication" in reason:
        return "check the user and password in JS_DATABASE_URL"
    if "does not exist" in reason:
        return "create the database (createdb) or set JS_DATABASE_URL"
    return "start PostgreSQL or set JS_DATABASE_URL"


def explain(outage: Outage, url: str) -> str:
    """One line for a person: what failed, where (never the password), and what to do."""
    where = describe_url(url)
    if outage.sqlite or sqlite_path(url) is not None:
        return f"cannot use the database in the {where} ({outage.reason}): {_hint(outage)}"
    return f"cannot reach the database at {where} ({outage.reason}): {_hint(outage)}"
