"""Login links: single-use, with an expiry (tb_users.link_expires_at, tb_users.link_used_at).

Links made before this revision never expired; they become live links that expire `GRACE_DAYS` after the upgrade
and log in once, so nobody is locked out by the upgrade itself.

Revision ID: 0002_login_links
Revises: 0001
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from alembic import op

revision = "0002_login_links"
down_revision = "0001"
branch_labels = None
depends_on = None

GRACE_DAYS = 7


def upgrade() -> None:
    op.add_column("tb_users", sa.Column("link_expires_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("tb_users", sa.Column("link_used_at", sa.DateTime(timezone=True), nullable=True))
    users = sa.table("tb_users", sa.column("link_expires_at", sa.DateTime(timezone=True)))
    op.execute(users.update().values(link_expires_at=datetime.now(timezone.utc) + timedelta(days=GRACE_DAYS)))


def downgrade() -> None:
    # two plain column drops (SQLite >= 3.35 drops a column in place; neither column is indexed or constrained)
    op.drop_column("tb_users", "link_used_at")
    op.drop_column("tb_users", "link_expires_at")
