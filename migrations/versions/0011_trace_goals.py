"""trace goals: a forged task's goal line, reference end state (with where it came from),
the candidate end states of its repeats, and the traces already forged per project, so that
a repeat upload adds no task

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 10:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json = judge_service.core.storage.types.AsciiJSON
    with op.batch_alter_table("forge_tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("goal", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("end_state", json(), nullable=True))
        batch_op.add_column(sa.Column("end_state_source", sa.String(16), nullable=True))
        batch_op.add_column(sa.Column("end_states", json(), nullable=True))
        batch_op.add_column(
            sa.Column("needs_review", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table(
        "forge_seen_traces",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("project", sa.String(64), nullable=False),
        sa.Column("trace_id", sa.String(256), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("task_ids", json(), nullable=False),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.UniqueConstraint("project", "trace_id", "content_hash", name="uq_seen_trace"),
    )


def downgrade() -> None:
    op.drop_table("forge_seen_traces")
    with op.batch_alter_table("forge_tasks", schema=None) as batch_op:
        for column in ("needs_review", "end_states", "end_state_source", "end_state", "goal"):
            batch_op.drop_column(column)
