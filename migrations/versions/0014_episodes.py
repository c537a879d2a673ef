"""episodes: an agent's play of a forge task in a world, stored after every step (the script
it is played from, the episode's state, the verdict and scored sample once done)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json = judge_service.core.storage.types.AsciiJSON
    when = judge_service.core.storage.types.UTCDateTime
    op.create_table(
        "episodes",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("world_id", sa.String(32), nullable=False),
        sa.Column("task_id", sa.String(64), nullable=False),
        sa.Column("project", sa.String(64), server_default="default", nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("run_id", sa.String(256), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", when(timezone=True), nullable=False),
        sa.Column("updated_at", when(timezone=True), nullable=False),
        # the large columns last, the script (read once per process) after all: SQLite
        # reaches a column after a large one only through the large one's overflow pages
        sa.Column("result", json(), nullable=True),
        sa.Column("episode", json(), nullable=False),
        sa.Column("script", json(), nullable=False),
    )
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.create_index("ix_episodes_world_id", ["world_id"], unique=False)
        batch_op.create_index("ix_episodes_key_status", ["key_id", "status"], unique=False)


def downgrade() -> None:
    op.drop_table("episodes")
