"""job dispatch times: when a mining or forge job's task was last sent, so that a worker's
sweeper re-sends the task of a queued job whose message the broker lost, once per lease

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 01:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("mining_jobs", "forge_jobs")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column(
                    "dispatched_at",
                    judge_service.core.storage.types.UTCDateTime(timezone=True),
                    nullable=True,
                )
            )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("dispatched_at")
