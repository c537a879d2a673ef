"""rubric versions, review queue, decisions, human labels, known hacks, mining jobs

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 23:22:42.708921
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mining_jobs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("rubric", sa.String(length=128), nullable=False),
        sa.Column("run_id", sa.String(length=256), nullable=False),
        sa.Column("model", judge_service.core.storage.types.AsciiJSON(), nullable=True),
        sa.Column("max_items", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
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
        sa.Column("result", judge_service.core.storage.types.AsciiJSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("mining_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mining_jobs_rubric"), ["rubric"], unique=False)
        batch_op.create_index(batch_op.f("ix_mining_jobs_status"), ["status"], unique=False)

    op.create_table(
        "rubric_versions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("criteria", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("prompts", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.Column("created_by", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=256), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "version"),
    )
    with op.batch_alter_table("rubric_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rubric_versions_name"), ["name"], unique=False)

    op.create_table(
        "human_labels",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("sample_pk", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.String(length=32), nullable=False),
        sa.Column("sample_id", sa.String(length=256), nullable=False),
        sa.Column("label", sa.String(length=8), nullable=False),
        sa.Column("reviewer", sa.String(length=64), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["sample_pk"], ["samples.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sample_pk", "reviewer"),
    )
    with op.batch_alter_table("human_labels", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_human_labels_sample_pk"), ["sample_pk"], unique=False)

    op.create_table(
        "review_items",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("dedupe_key", sa.String(length=300), nullable=False),
        sa.Column("rubric", sa.String(length=128), nullable=True),
        sa.Column("run_id", sa.String(length=256), nullable=True),
        sa.Column("batch_id", sa.String(length=32), nullable=True),
        sa.Column("sample_pk", sa.Integer(), nullable=True),
        sa.Column("sample_id", sa.String(length=256), nullable=True),
        sa.Column("priority", sa.Float(), nullable=False),
        sa.Column("payload", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("evidence", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.Column(
            "decided_at", judge_service.core.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("decided_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["sample_pk"], ["samples.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dedupe_key"),
    )
    with op.batch_alter_table("review_items", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_review_items_created_at"), ["created_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_review_items_rubric"), ["rubric"], unique=False)
        batch_op.create_index(batch_op.f("ix_review_items_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_review_items_sample_pk"), ["sample_pk"], unique=False)
        batch_op.create_index("ix_review_items_status_kind", ["status", "kind"], unique=False)

    op.create_table(
        "known_hacks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=True),
        sa.Column("confirmed", sa.Boolean(), nullable=False),
        sa.Column("sample", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("finding", judge_service.core.storage.types.AsciiJSON(), nullable=False),
        sa.Column("hack_score", sa.Float(), nullable=False),
        sa.Column("run_id", sa.String(length=256), nullable=True),
        sa.Column("reviewer", sa.String(length=64), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            judge_service.core.storage.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["item_id"], ["review_items.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("item_id"),
    )
    with op.batch_alter_table("known_hacks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_known_hacks_confirmed"), ["confirmed"], unique=False)
        batch_op.create_index(batch_op.f("ix_known_hacks_created_at"), ["created_at"], unique=False)

    op.create_table(
        "review_decisions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("reviewer", sa.String(length=64), nullable=False),
        sa.Column(
            "at", judge_service.core.storage.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("weight", sa.Float(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("outcome", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(["item_id"], ["review_items.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("review_decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_review_decisions_item_id"), ["item_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("review_decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_review_decisions_item_id"))

    op.drop_table("review_decisions")
    with op.batch_alter_table("known_hacks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_known_hacks_created_at"))
        batch_op.drop_index(batch_op.f("ix_known_hacks_confirmed"))

    op.drop_table("known_hacks")
    with op.batch_alter_table("review_items", schema=None) as batch_op:
        batch_op.drop_index("ix_review_items_status_kind")
        batch_op.drop_index(batch_op.f("ix_review_items_sample_pk"))
        batch_op.drop_index(batch_op.f("ix_review_items_run_id"))
        batch_op.drop_index(batch_op.f("ix_review_items_rubric"))
        batch_op.drop_index(batch_op.f("ix_review_items_created_at"))

    op.drop_table("review_items")
    with op.batch_alter_table("human_labels", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_human_labels_sample_pk"))

    op.drop_table("human_labels")
    with op.batch_alter_table("rubric_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rubric_versions_name"))

    op.drop_table("rubric_versions")
    with op.batch_alter_table("mining_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mining_jobs_status"))
        batch_op.drop_index(batch_op.f("ix_mining_jobs_rubric"))

    op.drop_table("mining_jobs")
