"""Repository for episodes: open one, read it (locked for a step), store a step, count the
open ones of a key.

A step stores over the version it read (``EpisodeRow.version``): if another step of the
same episode landed first, nothing is written and the caller answers 409. Steps and reads
run prebuilt statements on the connection's DBAPI cursor (:class:`Lean`), not the ORM nor
SQLAlchemy's execution: a step's whole budget is about 1 ms of CPU, and SQLAlchemy's
per-statement context, result and row objects cost ~0.1 ms a statement.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import fields
from typing import Any, cast

import pydantic_core
from pydantic import BaseModel
from sqlalchemy import Connection, Dialect, Table, Text, bindparam, func, select, update
from sqlalchemy.engine.interfaces import DBAPICursor, DBAPIModule
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

from judge_service.core.storage.types import AsciiJSON, UTCDateTime, ascii_json, utcnow

# the routes take the episode writer from here, with the rest of the episode storage
from judge_service.episodes.store_writers import one_writer as one_writer
from judge_service.episodes.tables import EpisodeRow, EpisodeScriptRow, Read, Step


def count_open(*, session: Session, key_id: str) -> int:
    query = select(func.count()).where(EpisodeRow.key_id == key_id, EpisodeRow.status == "open")
    return int(session.scalar(query) or 0)


def create_episode(
    *,
    session: Session,
    world_id: str,
    task_id: str,
    project: str,
    key_id: str,
    run_id: str | None,
    step: int | None,
    seed: int,
    script: dict[str, Any],
    episode: dict[str, Any],
    done: bool = False,
) -> EpisodeRow:
    now = utcnow()
    row = EpisodeRow(
        id=uuid.uuid4().hex,
        world_id=world_id,
        task_id=task_id,
        project=project,
        key_id=key_id,
        run_id=run_id,
        step=step,
        seed=seed,
        status="done" if done else "open",
        version=0,
        episode=episode,
        created_at=now,
        updated_at=now,
    )
    session.add_all([row, EpisodeScriptRow(episode_id=row.id, script=script)])
    session.flush()
    return row


#: The table, not the mapped class: statements over it skip the ORM's per-call work.
#: (SQLAlchemy types a mapped class's ``__table__`` as any ``FromClause``, but a class
#: declared with a ``__tablename__`` maps a ``Table``.)
TABLE = cast(Table, EpisodeRow.__table__)
#: The columns a read and a step select, in their rows' order.
COLUMNS = tuple(f.name for f in fields(Read))
STEP = tuple(f.name for f in fields(Step))
#: Statements built once, with bound parameters: building one costs more than running it
#: (SQLAlchemy's expression objects, compared and coerced on every construction).
_BY_ID = TABLE.c.id == bindparam("b_id")
READ = select(*(TABLE.c[name] for name in COLUMNS)).where(_BY_ID)
READ_STEP_FREE = select(*(TABLE.c[name] for name in STEP)).where(_BY_ID)
READ_STEP = READ_STEP_FREE.with_for_update()
_SCRIPTS = cast(Table, EpisodeScriptRow.__table__)
READ_SCRIPT = select(_SCRIPTS.c.script).where(_SCRIPTS.c.episode_id == bindparam("b_id"))
_STEP = {
    "episode": bindparam("p_episode", type_=Text()),  # the text of :func:`model_text`
    "version": bindparam("p_version"),
    "status": bindparam("p_status"),
    "updated_at": bindparam("p_updated", type_=UTCDateTime()),
}
_OVER = update(TABLE).where(_BY_ID, TABLE.c.version == bindparam("b_version"))
SAVE = _OVER.values(**_STEP)
SAVE_DONE = _OVER.values(**_STEP, result=bindparam("p_result", type_=AsciiJSON()))
RESULT = (
    update(TABLE)
    .where(_BY_ID)
    .values(
        result=bindparam("p_result", type_=AsciiJSON()),
        updated_at=bindparam("p_updated", type_=UTCDateTime()),
    )
)


class Lean:
    """A statement compiled once for a dialect, run on the connection's DBAPI cursor, in its
    transaction. Values go through the column types' own bind and result processors, so
    they are stored and read exactly as through SQLAlchemy; a DBAPI error is raised as
    SQLAlchemy raises it (its outage handling reads those)."""

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)  # a SELECT's or an UPDATE's (not DDL's)
        self.sql = compiled.string
        self.order = tuple(compiled.positiontup or ()) if compiled.positional else None
        self.binds = {
            name: process
            for name, param in compiled.binds.items()
            if (process := param.type.dialect_impl(dialect).bind_processor(dialect))
        }
        self.results = [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in getattr(statement, "selected_columns", ())
        ]

    def _params(self, values: dict[str, Any]) -> Any:
        for name, process in self.binds.items():
            values[name] = process(values[name])
        return values if self.order is None else tuple(values[name] for name in self.order)

    def run(self, connection: Connection, values: dict[str, Any]) -> tuple | int | None:
        """The first row (processed) of a query; the count of rows written otherwise."""
        cursor = connection.connection.cursor()
        try:
            cursor.execute(self.sql, self._params(values))
            if not self.results:
                return cursor.rowcount
            row = cursor.fetchone()
        except connection.dialect.loaded_dbapi.Error as exc:
            raise _as_sqlalchemy(connection, cursor, self.sql, exc) from exc
        finally:
            cursor.close()
        if row is None:
            return None
        return tuple(v if p is None else p(v) for v, p in zip(row, self.results, strict=True))


def _as_sqlalchemy(
    connection: Connection, cursor: DBAPICursor, sql: str, error: DBAPIModule.Error
) -> Exception:
    """``error`` as SQLAlchemy's execution raises it: wrapped, and the connection dropped
    from the pool when the server went away."""
    dialect = connection.dialect
    gone = dialect.is_disconnect(error, connection.connection.dbapi_connection, cursor)
    if gone:
        connection.invalidate(error)
    return DBAPIError.instance(
        sql, None, error, dialect.loaded_dbapi.Error, connection_invalidated=gone, dialect=dialect
    )


@functools.lru_cache(maxsize=64)
def _lean(statement: ClauseElement, dialect: Dialect) -> Lean:
    return Lean(statement, dialect)


def _run(connection: Connection, statement: ClauseElement, values: dict[str, Any]) -> Any:
    return _lean(statement, connection.dialect).run(connection, values)


def model_text(model: BaseModel) -> str:
    """``model`` as :class:`AsciiJSON` stores it (the same value), written by pydantic-core
    straight from the model: half the time of dumping it to a dict first. Text that is not
    ASCII, or holds a lone surrogate, goes the dict's way."""
    try:
        encoded = pydantic_core.to_json(model, inf_nan_mode="constants")
    except pydantic_core.PydanticSerializationError:  # a lone surrogate: `json` escapes it
        return ascii_json(model.model_dump(mode="json"))
    return encoded.decode() if encoded.isascii() else ascii_json(model.model_dump(mode="json"))


def read_episode(connection: Connection, episode_id: str) -> Read | None:
    """The episode's :data:`COLUMNS`."""
    row = _run(connection, READ, {"b_id": episode_id})
    return None if row is None else Read(*row)


def read_step(connection: Connection, episode_id: str, *, lock: bool = True) -> Step | None:
    """The episode's :data:`STEP`, its row locked until the transaction ends on PostgreSQL
    (SQLite has no row locks: the version check stands in); ``lock=False``: not locked, for
    a read before a step's models are asked (its write then stands on the version alone)."""
    row = _run(connection, READ_STEP if lock else READ_STEP_FREE, {"b_id": episode_id})
    return None if row is None else Step(*row)


def read_script(connection: Connection, episode_id: str) -> dict[str, Any]:
    return _run(connection, READ_SCRIPT, {"b_id": episode_id})[0]


def save_step(
    connection: Connection,
    *,
    episode_id: str,
    version: int,
    episode: BaseModel,
    done: bool,
    result: dict[str, Any] | None = None,
) -> bool:
    """Store the episode after a step over ``version``; False if another step came first."""
    values: dict[str, Any] = {
        "b_id": episode_id,
        "b_version": version,
        "p_episode": model_text(episode),
        "p_version": version + 1,
        "p_status": "done" if done else "open",
        "p_updated": utcnow(),
    }
    if result is None:
        return _run(connection, SAVE, values) == 1
    return _run(connection, SAVE_DONE, {**values, "p_result": result}) == 1


def store_result(connection: Connection, *, episode_id: str, result: dict[str, Any]) -> None:
    _run(connection, RESULT, {"b_id": episode_id, "p_result": result, "p_updated": utcnow()})
