"""Initial schema: users, sessions, projects, members, items, assignments, labels.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "tb_users",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("active", sa.Boolean, nullable=False),
        _ts("created_at"),
    )
    op.create_table(
        "tb_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("tb_users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        _ts("created_at"),
        _ts("expires_at"),
    )
    op.create_index("ix_tb_sessions_user_id", "tb_sessions", ["user_id"])
    op.create_table(
        "tb_projects",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("task_type", sa.String(20), nullable=False),
        sa.Column("instructions", sa.Text, nullable=False),
        sa.Column("n_per_item", sa.Integer, nullable=False),
        sa.Column("gold_every", sa.Integer, nullable=False),
        sa.Column("next_seq", sa.Integer, nullable=False),
        _ts("created_at"),
    )
    op.create_table(
        "tb_members",
        sa.Column("project_id", sa.Integer, sa.ForeignKey("tb_projects.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("tb_users.id", ondelete="CASCADE"), primary_key=True),
    )
    op.create_table(
        "tb_items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("tb_projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("ext_id", sa.String(300), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("is_gold", sa.Boolean, nullable=False),
        sa.Column("gold", sa.JSON, nullable=True),
        sa.Column("n_assigned", sa.Integer, nullable=False),
        sa.Column("source", sa.String(500), nullable=False),
        sa.UniqueConstraint("project_id", "ext_id", name="uq_tb_items_project_ext"),
    )
    op.create_index("ix_tb_items_queue", "tb_items", ["project_id", "is_gold", "n_assigned", "seq"])
    op.create_table(
        "tb_assignments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("tb_projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("tb_items.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("tb_users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("layout", sa.JSON, nullable=False),
        sa.Column("is_gold", sa.Boolean, nullable=False),
        sa.Column("done", sa.Boolean, nullable=False),
        _ts("created_at"),
        sa.UniqueConstraint("item_id", "user_id", name="uq_tb_assignments_item_user"),
    )
    op.create_index("ix_tb_assignments_user_open", "tb_assignments", ["user_id", "project_id", "done"])
    op.create_table(
        "tb_labels",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "assignment_id",
            sa.Integer,
            sa.ForeignKey("tb_assignments.id", ondelete="CASCADE"),
            nullable=False,
            unique=True,
        ),
        sa.Column("project_id", sa.Integer, sa.ForeignKey("tb_projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("tb_items.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("tb_users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("value", sa.JSON, nullable=False),
        sa.Column("flagged", sa.Boolean, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("duration_ms", sa.Integer, nullable=True),
        _ts("submitted_at"),
    )
    for col in ("project_id", "item_id", "user_id"):
        op.create_index(f"ix_tb_labels_{col}", "tb_labels", [col])


def downgrade() -> None:
    for name in ("tb_labels", "tb_assignments", "tb_items", "tb_members", "tb_projects", "tb_sessions", "tb_users"):
        op.drop_table(name)
