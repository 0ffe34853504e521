"""Repeat battles: an earlier battle shown again (its sides drawn anew) to measure a voter's consistency.

Revision ID: a0002
Revises: a0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0002"
down_revision = "a0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("arena_battles") as batch:
        batch.add_column(sa.Column("repeat_of", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("arena_battles") as batch:
        batch.drop_column("repeat_of")
