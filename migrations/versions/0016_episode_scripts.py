"""episode_scripts: an episode's script in its own table, written once at reset

Why: SQLite rewrites a whole row on an update (PostgreSQL keeps a large unchanged value where
it is). With the script (~20 KB on retail traces: the tools, the system prompt, the traced
turns) in the episodes row, every step wrote it again with the episode it changed.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json = judge_service.core.storage.types.AsciiJSON
    op.create_table(
        "episode_scripts",
        sa.Column("episode_id", sa.String(32), primary_key=True),
        sa.Column("script", json(), nullable=False),
    )
    op.execute("INSERT INTO episode_scripts (episode_id, script) SELECT id, script FROM episodes")
    with op.batch_alter_table("episodes") as batch:
        batch.drop_column("script")


def downgrade() -> None:
    json = judge_service.core.storage.types.AsciiJSON
    with op.batch_alter_table("episodes") as batch:
        batch.add_column(sa.Column("script", json(), nullable=True))
    op.execute(
        "UPDATE episodes SET script = (SELECT s.script FROM episode_scripts s "
        "WHERE s.episode_id = episodes.id)"
    )
    with op.batch_alter_table("episodes") as batch:
        batch.alter_column("script", existing_type=json(), nullable=False)
    op.drop_table("episode_scripts")
