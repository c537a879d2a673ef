"""projects: a project column on keys, batches, rubric versions, mining jobs, review items,
forge jobs and known hacks; rubric names unique per project

Every existing row goes into project ``default`` (the server default fills them). Existing
admin keys become all-projects keys (``*``): before projects they saw everything, and they
keep doing so; trainer and reviewer keys are ``default`` keys.

Revision ID: 0009
Revises: 0006
Create Date: 2026-12-01 10:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Table -> whether its project column is indexed (the tables whose lists filter by project).
TABLES = {
    "api_keys": False,
    "batches": True,
    "rubric_versions": True,
    "mining_jobs": False,
    "review_items": True,
    "forge_jobs": True,
    "known_hacks": True,
}
#: 0002 left (name, version) unnamed: PostgreSQL named it so; SQLite gets it from this.
PG_RUBRIC_UNIQUE = "rubric_versions_name_version_key"
SQLITE_NAMING = {"uq": "uq_%(table_name)s_%(column_0_N_name)s"}


def _column() -> sa.Column:
    return sa.Column("project", sa.String(length=64), server_default="default", nullable=False)


def upgrade() -> None:
    for table, indexed in TABLES.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(_column())
            if indexed:
                batch_op.create_index(f"ix_{table}_project", ["project"], unique=False)
    op.execute("UPDATE api_keys SET project = '*' WHERE role = 'admin'")
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table(
            "rubric_versions", schema=None, naming_convention=SQLITE_NAMING
        ) as batch_op:
            batch_op.drop_constraint("uq_rubric_versions_name_version", type_="unique")
            batch_op.create_unique_constraint(
                "uq_rubric_versions_project", ["project", "name", "version"]
            )
    else:
        op.drop_constraint(PG_RUBRIC_UNIQUE, "rubric_versions", type_="unique")
        op.create_unique_constraint(
            "uq_rubric_versions_project", "rubric_versions", ["project", "name", "version"]
        )


def downgrade() -> None:
    """Back to one namespace: fails (unique violation) if two projects share a rubric name."""
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("rubric_versions", schema=None) as batch_op:
            batch_op.drop_constraint("uq_rubric_versions_project", type_="unique")
            batch_op.create_unique_constraint(
                "uq_rubric_versions_name_version", ["name", "version"]
            )
    else:
        op.drop_constraint("uq_rubric_versions_project", "rubric_versions", type_="unique")
        op.create_unique_constraint(PG_RUBRIC_UNIQUE, "rubric_versions", ["name", "version"])
    for table, indexed in TABLES.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            if indexed:
                batch_op.drop_index(f"ix_{table}_project")
            batch_op.drop_column("project")
