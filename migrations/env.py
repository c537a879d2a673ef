"""Alembic environment: runs on the connection judge_service hands over, or on the URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from judge_service.audit import tables as audit_tables  # noqa: F401  (joins Base.metadata)
from judge_service.core.storage import worker_tables  # noqa: F401  (joins Base.metadata)
from judge_service.core.storage.tables import Base
from judge_service.episodes import tables as episode_tables  # noqa: F401  (joins Base.metadata)
from judge_service.forge import tables as forge_tables  # noqa: F401  (joins Base.metadata)
from judge_service.review import tables as review_tables  # noqa: F401  (joins Base.metadata)
from judge_service.rubrics import tables as rubric_tables  # noqa: F401  (joins Base.metadata)
from judge_service.world import tables as world_tables  # noqa: F401  (joins Base.metadata)

config = context.config
target_metadata = Base.metadata


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.begin() as own_connection:
        _run(own_connection)


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
