"""forge jobs, task families, forge tasks

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 07:15:06.942542
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "forge_jobs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("options", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("inputs", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("counts", judge_service.core.storage.types.AsciiJSON(), nullable=True),
        sa.Column("result", judge_service.core.storage.types.AsciiJSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.Column("created_by", sa.String(length=64), nullable=True),
        sa.Column(
            "started_at", judge_service.core.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "finished_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("forge_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_forge_jobs_status"), ["status"], unique=False)

    op.create_table(
        "task_families",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("terms", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("tasks", sa.Integer(), nullable=False),
        sa.Column("failed_traces", sa.Integer(), nullable=False),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["job_id"], ["forge_jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("task_families", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_families_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_task_families_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_task_families_status"), ["status"], unique=False)

    op.create_table(
        "forge_tasks",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("family_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("prompt", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("tools", judge_service.core.storage.types.AsciiJSON(), nullable=True),
        sa.Column("reference", judge_service.core.storage.types.AsciiJSON(), nullable=True),
        sa.Column("source", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("with_context", sa.Float(), nullable=True),
        sa.Column("without_context", sa.Float(), nullable=True),
        sa.Column("duplicates", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("failures", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("tier", sa.String(length=16), nullable=True),
        sa.Column("tier_run_id", sa.String(length=256), nullable=True),
        sa.Column(
            "tier_at", judge_service.core.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("tier_stats", judge_service.core.storage.types.AsciiJSON(), nullable=True),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["family_id"], ["task_families.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["job_id"], ["forge_jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("forge_tasks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_forge_tasks_family_id"), ["family_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_forge_tasks_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_forge_tasks_tier"), ["tier"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("forge_tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_forge_tasks_tier"))
        batch_op.drop_index(batch_op.f("ix_forge_tasks_job_id"))
        batch_op.drop_index(batch_op.f("ix_forge_tasks_family_id"))

    op.drop_table("forge_tasks")
    with op.batch_alter_table("task_families", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_task_families_status"))
        batch_op.drop_index(batch_op.f("ix_task_families_name"))
        batch_op.drop_index(batch_op.f("ix_task_families_job_id"))

    op.drop_table("task_families")
    with op.batch_alter_table("forge_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_forge_jobs_status"))

    op.drop_table("forge_jobs")
