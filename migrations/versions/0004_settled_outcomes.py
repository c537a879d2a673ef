"""settled outcomes: a batch's outcomes committed before they are written out as results

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 08:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "settled_outcomes",
        sa.Column("batch_id", sa.String(length=32), nullable=False),
        sa.Column("outcomes", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["batch_id"], ["batches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("batch_id"),
    )


def downgrade() -> None:
    op.drop_table("settled_outcomes")
