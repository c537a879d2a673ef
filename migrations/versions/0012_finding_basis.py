"""finding basis: what backs each audit finding (code, tool, output, narration, model), the
fact it points to and the narration that supports or contradicts it

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 12:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("basis", sa.String(16), nullable=True))
        batch_op.add_column(sa.Column("fact", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("narration", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.drop_column("narration")
        batch_op.drop_column("fact")
        batch_op.drop_column("basis")
