"""worlds.models: the models a world's episodes use by default (the simulator that answers
what nothing learned answers, and the model that plays the user)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 06:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import judge_service.core.storage.types

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json = judge_service.core.storage.types.AsciiJSON
    with op.batch_alter_table("worlds") as batch:
        batch.add_column(sa.Column("models", json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("worlds") as batch:
        batch.drop_column("models")
