"""Lean multi-row inserts for the per-batch hot path (results, verdicts, findings).

Why not ``session.execute(insert(table), rows)``: SQLAlchemy processes every
parameter of every row in Python, about 5 µs a row here, and a GRPO step stores
hundreds of rows while the trainer waits. Callers hand rows over as tuples of
values the driver takes as they are (numbers, text, None, values already passed
through their column's bind processor), in the order of the ``columns`` they
name. The statement is still SQLAlchemy's, compiled once per dialect, table and
column set.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sqlalchemy import Table, insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

Row = tuple[Any, ...]

#: Rows per statement for multi-row VALUES (SQLite allows 32,766 parameters).
PAGE_ROWS = 500


def _reorder(columns: tuple[str, ...], order: tuple[str, ...]) -> Callable[[Row], Row] | None:
    """How to put a row in the statement's parameter order; None when it already is."""
    if order == columns:
        return None
    return operator.itemgetter(*(columns.index(name) for name in order))  # columns: 2 or more


def _values_group(columns: tuple[str, ...]) -> str:
    """One row's ``(?, ?, ...)`` in a SQLite INSERT of ``columns``."""
    return "(" + ", ".join("?" for _ in columns) + ")"


def _pages(
    sql: str, group: str, rows: Sequence[Row], reorder: Callable[[Row], Row] | None
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """SQLite multi-row statements of at most ``PAGE_ROWS`` rows, with their flat parameters:
    ``sql``'s single VALUES ``group`` repeated once per row of the page."""
    for start in range(0, len(rows), PAGE_ROWS):
        page = rows[start : start + PAGE_ROWS]
        if reorder is not None:
            page = [reorder(row) for row in page]
        statement = sql.replace(group, ", ".join([group] * len(page)))
        yield statement, tuple(itertools.chain.from_iterable(page))


@functools.lru_cache(maxsize=64)
def _statement(
    dialect: Dialect, table: Table, columns: tuple[str, ...]
) -> tuple[str, Callable[[Row], Row] | None]:
    """The INSERT's SQL and, for positional parameter styles, the row reordering."""
    compiled = insert(table).compile(dialect=dialect, column_keys=list(columns))
    if not compiled.positional:
        return str(compiled), None
    return str(compiled), _reorder(columns, tuple(compiled.positiontup or ()))


def insert_rows(
    session: Session, table: Table, columns: tuple[str, ...], rows: Sequence[Row]
) -> None:
    """Insert ``rows`` (tuples in ``columns`` order, plain values): multi-row statements on
    SQLite, one ``executemany`` elsewhere."""
    if not rows:
        return
    connection = session.connection()
    sql, reorder = _statement(connection.dialect, table, columns)
    if connection.dialect.name == "sqlite":  # multi-row VALUES: one step, not one per row
        for statement, page in _pages(sql, _values_group(columns), rows, reorder):
            connection.exec_driver_sql(statement, page)
        return
    if connection.dialect.positional:
        parameters: list[Any] = list(rows) if reorder is None else [reorder(r) for r in rows]
    else:  # named style (psycopg): one dict per row
        parameters = [dict(zip(columns, row, strict=True)) for row in rows]
    connection.exec_driver_sql(sql, parameters)


def bind_processor(table: Table, column: str, dialect: Dialect) -> Callable[[Any], Any]:
    """The column type's own conversion to a driver value (identity when it has none)."""
    processor = table.c[column].type._cached_bind_processor(dialect)
    return processor if processor is not None else _identity


def _identity(value: Any) -> Any:
    return value


@functools.lru_cache(maxsize=16)
def _returning_statement(
    dialect: Dialect,
    table: Table,
    columns: tuple[str, ...],
    conflict: str,
    returning: tuple[str, ...],
) -> tuple[str, str, Callable[[Row], Row] | None]:
    """(SQL around the VALUES group, the group, the row reordering)."""
    statement = (
        sqlite_insert(table)
        .on_conflict_do_nothing(index_elements=[conflict])
        .returning(*(table.c[name] for name in returning))
    )
    compiled = statement.compile(dialect=dialect, column_keys=list(columns))
    group = _values_group(columns)
    sql = str(compiled)
    if sql.count(group) != 1 or not compiled.positiontup:
        raise RuntimeError(f"unexpected INSERT for {table.name}: {sql}")
    return sql, group, _reorder(columns, tuple(compiled.positiontup))


def insert_ignoring_returning(
    session: Session,
    table: Table,
    columns: tuple[str, ...],
    rows: Sequence[Row],
    *,
    conflict: str,
    returning: tuple[str, ...],
) -> list[Sequence[Any]]:
    """SQLite only: INSERT ... ON CONFLICT (conflict) DO NOTHING RETURNING, in multi-row
    statements; the rows inserted come back, as SQLAlchemy rows of the ``returning``
    values (those that conflicted do not).

    ``rows`` are tuples in ``columns`` order, already in driver form (see the module).
    """
    connection = session.connection()
    sql, group, reorder = _returning_statement(
        connection.dialect, table, columns, conflict, returning
    )
    inserted: list[Sequence[Any]] = []
    for statement, parameters in _pages(sql, group, rows, reorder):
        inserted.extend(connection.exec_driver_sql(statement, parameters).fetchall())
    return inserted
