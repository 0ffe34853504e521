"""Crowd studies that hold with real crowds: the study link kept so the researcher can see it again
(tb_studies.link_secret), the seed of each participant's gold schedule (tb_studies.gold_seed), an opaque
per-assignment reference for participants' pages and URLs (tb_assignments.ref, so nothing on a page names an
item), and the server's own time from serving an assignment to its label (tb_labels.server_ms).

Studies made before this revision have no kept link (it was shown once and stored only hashed) and no seed: they
get a seed drawn now, and `study show` says their link cannot be shown again.

Revision ID: 0004_honest_studies
Revises: 0003_studies
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0004_honest_studies"
down_revision = "0003_studies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tb_studies", sa.Column("link_secret", sa.String(64), nullable=True))
    op.add_column("tb_studies", sa.Column("gold_seed", sa.Integer, nullable=True))
    studies = sa.table("tb_studies", sa.column("id", sa.Integer), sa.column("gold_seed", sa.Integer))
    conn = op.get_bind()
    for (sid,) in conn.execute(sa.select(studies.c.id)).all():
        conn.execute(studies.update().where(studies.c.id == sid).values(gold_seed=secrets.randbelow(2**31)))
    op.add_column("tb_assignments", sa.Column("ref", sa.String(32), nullable=True))
    # partial: only participants' assignments have a reference, so annotators' inserts never touch the index
    op.create_index("ix_tb_assignments_ref", "tb_assignments", ["ref"], unique=True,
                    postgresql_where=sa.text("ref IS NOT NULL"), sqlite_where=sa.text("ref IS NOT NULL"))
    op.add_column("tb_labels", sa.Column("server_ms", sa.Integer, nullable=True))


def downgrade() -> None:
    op.drop_column("tb_labels", "server_ms")
    op.drop_index("ix_tb_assignments_ref", table_name="tb_assignments")
    op.drop_column("tb_assignments", "ref")
    op.drop_column("tb_studies", "gold_seed")
    op.drop_column("tb_studies", "link_secret")
