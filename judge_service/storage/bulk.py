"""Lean multi-row inserts for the per-batch hot path (results, verdicts, findings).

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
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
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


#: Rows per statement for multi-row VALUES (SQLite allows 32,766 parameters).
PAGE_ROWS = 500


@functools.lru_cache(maxsize=16)
def _returning_statement(
    dialect: Dialect, table: Table, keys: tuple[str, ...], conflict: str, returning: tuple[str, ...]
) -> tuple[str, str, tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """(SQL around the VALUES group, the group, parameter order, bind processors)."""
    statement = (
        sqlite_insert(table)
        .on_conflict_do_nothing(index_elements=[conflict])
        .returning(*(table.c[name] for name in returning))
    )
    compiled = statement.compile(dialect=dialect, column_keys=list(keys))
    group = "(" + ", ".join("?" for _ in keys) + ")"
    sql = str(compiled)
    if sql.count(group) != 1 or not compiled.positiontup:
        raise RuntimeError(f"unexpected INSERT for {table.name}: {sql}")
    processors = tuple(
        (key, processor)
        for key in compiled.positiontup
        if (processor := table.c[key].type._cached_bind_processor(dialect)) is not None
    )
    return sql, group, tuple(compiled.positiontup), processors


def insert_ignoring_returning(
    session: Session,
    table: Table,
    rows: Sequence[dict[str, Any]],
    *,
    conflict: str,
    returning: tuple[str, ...],
) -> list[tuple[Any, ...]]:
    """SQLite only: INSERT ... ON CONFLICT (conflict) DO NOTHING RETURNING, in multi-row
    statements; the rows inserted come back (those that conflicted do not).

    Column types' bind processors still run, but only for the columns that have one
    (JSON, dates, booleans), not SQLAlchemy's whole per-parameter path.
    """
    connection = session.connection()
    keys = tuple(rows[0])
    sql, group, order, processors = _returning_statement(
        connection.dialect, table, keys, conflict, returning
    )
    values = operator.itemgetter(*order)
    inserted: list[tuple[Any, ...]] = []
    for start in range(0, len(rows), PAGE_ROWS):
        page = rows[start : start + PAGE_ROWS]
        if processors:
            page = [{**row, **{k: p(row[k]) for k, p in processors}} for row in page]
        parameters = [value for row in page for value in values(row)]
        statement = sql.replace(group, ", ".join([group] * len(page)))
        inserted.extend(tuple(r) for r in connection.exec_driver_sql(statement, tuple(parameters)))
    return inserted
