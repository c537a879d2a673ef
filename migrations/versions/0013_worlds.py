"""worlds: a world built from the traces of forge jobs (a background job of kind ``world``),
its counts, its report (per tool paths and transitions, fidelity on held-out runs) and the
world itself

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 03:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json = judge_service.core.storage.types.AsciiJSON
    when = judge_service.core.storage.types.UTCDateTime
    op.create_table(
        "worlds",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("project", sa.String(64), server_default="default", nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("jobs", json(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("counts", json(), nullable=True),
        sa.Column("report", json(), nullable=True),
        sa.Column("world", json(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", when(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=True),
        sa.Column("started_at", when(timezone=True), nullable=True),
        sa.Column("finished_at", when(timezone=True), nullable=True),
        sa.Column("dispatched_at", when(timezone=True), nullable=True),
    )
    with op.batch_alter_table("worlds", schema=None) as batch_op:
        batch_op.create_index("ix_worlds_project", ["project"], unique=False)
        batch_op.create_index("ix_worlds_status", ["status"], unique=False)


def downgrade() -> None:
    op.drop_table("worlds")
