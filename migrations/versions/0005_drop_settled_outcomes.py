"""drop settled outcomes: one submission path, the worker writes results as rows

A batch that still had a settled row when this runs is left ``running`` without
results, and the worker scores it again when it resumes unfinished batches.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 07:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_table("settled_outcomes")


def downgrade() -> None:
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
