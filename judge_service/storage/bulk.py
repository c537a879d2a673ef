"""Plain multi-row inserts for the per-batch hot path (verdicts, findings).

Why not ``session.execute(insert(table), rows)``: SQLAlchemy processes every
parameter of every row in Python, about 5 µs a row here, and a GRPO step stores
hundreds of verdict rows while the trainer waits. These tables hold only plain
values (numbers, text, None), which SQLite's and psycopg's drivers take as they
are, so the rows go to the driver's ``executemany`` unprocessed. The statement is
still SQLAlchemy's, compiled once per dialect, table and column set.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session


@functools.lru_cache(maxsize=64)
def _statement(dialect: Dialect, table: Table, keys: tuple[str, ...]) -> tuple[str, tuple | None]:
    """The INSERT's SQL and, for positional parameter styles, the parameter order."""
    compiled = insert(table).compile(dialect=dialect, column_keys=list(keys))
    order = tuple(compiled.positiontup or ()) if compiled.positional else None
    return str(compiled), order


def insert_plain(session: Session, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (same keys in each, plain values only) in one ``executemany``."""
    if not rows:
        return
    connection = session.connection()
    sql, order = _statement(connection.dialect, table, tuple(rows[0]))
    if order is None:
        connection.exec_driver_sql(sql, list(rows))
    else:
        values = operator.itemgetter(*order)
        connection.exec_driver_sql(sql, [values(row) for row in rows])
