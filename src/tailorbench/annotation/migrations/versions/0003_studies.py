"""Crowd studies: tb_studies (a project opened to a redirect-based platform such as Prolific) and tb_participants
(one platform participant, their account, consent and standing).

Revision ID: 0003_studies
Revises: 0002_login_links
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_studies"
down_revision = "0002_login_links"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "tb_studies",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("tb_projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("quota", sa.Integer, nullable=False),
        sa.Column("max_participants", sa.Integer, nullable=False),
        sa.Column("time_limit_min", sa.Integer, nullable=False),
        sa.Column("completion_url", sa.String(1000), nullable=False),
        sa.Column("completion_code", sa.String(100), nullable=False),
        sa.Column("screenout_code", sa.String(100), nullable=True),
        sa.Column("screenout_gold_below", sa.Float, nullable=True),
        sa.Column("screenout_after_gold", sa.Integer, nullable=False),
        sa.Column("param_id", sa.String(100), nullable=False),
        sa.Column("param_study", sa.String(100), nullable=False),
        sa.Column("param_session", sa.String(100), nullable=False),
        sa.Column("consent", sa.Text, nullable=False),
        sa.Column("is_open", sa.Boolean, nullable=False),
        _ts("created_at"),
    )
    op.create_index("ix_tb_studies_project_id", "tb_studies", ["project_id"])
    op.create_table(
        "tb_participants",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("tb_studies.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("tb_users.id", ondelete="CASCADE"), nullable=False,
                  unique=True),
        sa.Column("external_id", sa.String(100), nullable=False),
        sa.Column("external_study_id", sa.String(100), nullable=False),
        sa.Column("external_session_id", sa.String(100), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        _ts("consent_at"),
        _ts("started_at"),
        _ts("finished_at", nullable=True),
        _ts("released_at", nullable=True),
        sa.UniqueConstraint("study_id", "external_id", name="uq_tb_participants_study_external"),
    )
    op.create_index("ix_tb_participants_study_status", "tb_participants", ["study_id", "status"])


def downgrade() -> None:
    op.drop_table("tb_participants")
    op.drop_table("tb_studies")
