"""``INSERT ... ON CONFLICT DO NOTHING RETURNING id`` on PostgreSQL and SQLite.

Why not a savepoint and a caught IntegrityError: pysqlite starts no transaction before a
SAVEPOINT, so releasing it commits, and the caller's rollback no longer undoes the row.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def insert_or_ignore(
    session: Session, model: Any, values: dict[str, Any], conflict: list[str]
) -> int | None:
    """Insert a row unless it collides on the unique ``conflict`` columns; its id or None."""
    dialect = session.get_bind().dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    statement = (
        module.insert(model)
        .values(**values)
        .on_conflict_do_nothing(index_elements=conflict)
        .returning(model.id)
    )
    return session.execute(statement).scalar()
