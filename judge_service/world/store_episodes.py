"""Repository for episodes: open one, read it (locked for a step), store a step, count the
open ones of a key.

A step stores over the version it read (``EpisodeRow.version``): if another step of the
same episode landed first, nothing is written and the caller answers 409. Steps and reads
go through a plain connection with the columns they need, not the ORM: a step's whole
budget is about 2 ms of CPU, and a session with an identity map costs a few tenths of it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, select, update
from sqlalchemy.orm import Session

from judge_service.core.storage.types import AsciiJSON, UTCDateTime, utcnow
from judge_service.world.tables_episodes import EpisodeRow

_WRITERS: dict[str, threading.Lock] = {}
_WRITERS_LOCK = threading.Lock()


@contextmanager
def one_writer(url: str) -> Iterator[None]:
    """On SQLite, this process's episode writes one at a time (PostgreSQL locks rows).

    SQLite has one writer per file. Threads whose transactions want it at once wait in its
    busy handler, which sleeps (1, 2, 5 ... 100 ms) instead of being woken: 256 episodes
    stepping together waited a second each. A mutex hands the turn over at once."""
    if not url.startswith("sqlite"):
        yield
        return
    with _WRITERS_LOCK:
        lock = _WRITERS.setdefault(url, threading.Lock())
    with lock:
        yield


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
        script=script,
        episode=episode,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    session.flush()
    return row


#: The table, not the mapped class: statements over it skip the ORM's per-call work.
TABLE = EpisodeRow.__table__
#: What a step and a state read need of an episode's row (not its script: that is cached).
COLUMNS = (
    "id", "world_id", "task_id", "project", "run_id", "step", "seed", "status", "version",
    "episode", "result", "created_at", "updated_at",
)  # fmt: skip
#: Statements built once, with bound parameters: building one costs more than running it
#: (SQLAlchemy's expression objects, compared and coerced on every construction).
READ = select(*(TABLE.c[name] for name in COLUMNS)).where(TABLE.c.id == bindparam("b_id"))
READ_LOCKED = READ.with_for_update()
READ_SCRIPT = select(TABLE.c.script).where(TABLE.c.id == bindparam("b_id"))
_STEP = {
    "episode": bindparam("p_episode", type_=AsciiJSON()),
    "version": bindparam("p_version"),
    "status": bindparam("p_status"),
    "updated_at": bindparam("p_updated", type_=UTCDateTime()),
}
_OVER = update(TABLE).where(
    TABLE.c.id == bindparam("b_id"), TABLE.c.version == bindparam("b_version")
)
SAVE = _OVER.values(**_STEP)
SAVE_DONE = _OVER.values(**_STEP, result=bindparam("p_result", type_=AsciiJSON()))
RESULT = (
    update(TABLE)
    .where(TABLE.c.id == bindparam("b_id"))
    .values(
        result=bindparam("p_result", type_=AsciiJSON()),
        updated_at=bindparam("p_updated", type_=UTCDateTime()),
    )
)


def read_episode(connection: Connection, episode_id: str, *, lock: bool = False) -> Row | None:
    """The episode's :data:`COLUMNS` (``lock``: its row locked until the transaction ends,
    on PostgreSQL; SQLite has no row locks, the version check stands in)."""
    return connection.execute(READ_LOCKED if lock else READ, {"b_id": episode_id}).first()


def read_script(connection: Connection, episode_id: str) -> dict[str, Any]:
    return connection.execute(READ_SCRIPT, {"b_id": episode_id}).scalar_one()


def save_step(
    connection: Connection,
    *,
    episode_id: str,
    version: int,
    episode: dict[str, Any],
    done: bool,
    result: dict[str, Any] | None = None,
) -> bool:
    """Store the episode after a step over ``version``; False if another step came first."""
    values: dict[str, Any] = {
        "b_id": episode_id,
        "b_version": version,
        "p_episode": episode,
        "p_version": version + 1,
        "p_status": "done" if done else "open",
        "p_updated": utcnow(),
    }
    if result is None:
        return connection.execute(SAVE, values).rowcount == 1
    return connection.execute(SAVE_DONE, {**values, "p_result": result}).rowcount == 1


def store_result(connection: Connection, *, episode_id: str, result: dict[str, Any]) -> None:
    connection.execute(RESULT, {"b_id": episode_id, "p_result": result, "p_updated": utcnow()})
