"""batch leases and worker heartbeats

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 10:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_owner", sa.String(length=128), nullable=True))
        batch_op.add_column(
            sa.Column(
                "lease_until",
                judge_service.core.storage.types.UTCDateTime(timezone=True),
                nullable=True,
            )
        )
        batch_op.add_column(
            sa.Column(
                "dispatched_at",
                judge_service.core.storage.types.UTCDateTime(timezone=True),
                nullable=True,
            )
        )
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("hostname", sa.String(length=256), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column(
            "started_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.Column(
            "seen_at", judge_service.core.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "stopped_at", judge_service.core.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("busy", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_workers_seen_at"), ["seen_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workers_seen_at"))
    op.drop_table("workers")
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_column("dispatched_at")
        batch_op.drop_column("lease_until")
        batch_op.drop_column("lease_owner")
