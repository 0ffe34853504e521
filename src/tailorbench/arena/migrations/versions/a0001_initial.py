"""The arena's initial schema: participants, questions, battles, votes, flags, meta, exports, deletions.

Revision ID: a0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "arena_deletions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("battles", sa.Integer(), nullable=False),
        sa.Column("votes", sa.Integer(), nullable=False),
        sa.Column("cache_entries", sa.Integer(), nullable=False),
        sa.Column("receipt", sa.Text(), nullable=False),
    )
    op.create_table(
        "arena_exports",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("reveal_ids", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "arena_meta",
        sa.Column("key", sa.String(length=40), primary_key=True),
        sa.Column("number", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
    )
    op.create_table(
        "arena_participants",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("pid", sa.String(length=40), nullable=False, unique=True),
        sa.Column("external_id", sa.String(length=128), nullable=True, unique=True),
        sa.Column("session_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("csrf", sa.String(length=64), nullable=False),
        sa.Column("profile", sa.Text(), nullable=True),
        sa.Column("consent_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("spend_usd", sa.Float(), nullable=False),
    )
    op.create_table(
        "arena_questions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("participant_id", sa.Integer(),
                  sa.ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_arena_questions_participant_id", "arena_questions", ["participant_id"])
    op.create_table(
        "arena_battles",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("ref", sa.String(length=40), nullable=False, unique=True),
        sa.Column("participant_id", sa.Integer(),
                  sa.ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("question_id", sa.Integer(),
                  sa.ForeignKey("arena_questions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("model_a", sa.String(length=64), nullable=False),
        sa.Column("model_b", sa.String(length=64), nullable=False),
        sa.Column("a_left", sa.Boolean(), nullable=False),
        sa.Column("gold", sa.Boolean(), nullable=False),
        sa.Column("gold_better", sa.String(length=1), nullable=True),
        sa.Column("answer_a", sa.Text(), nullable=True),
        sa.Column("answer_b", sa.Text(), nullable=True),
        sa.Column("status_a", sa.String(length=10), nullable=False),
        sa.Column("status_b", sa.String(length=10), nullable=False),
        sa.Column("error_a", sa.Text(), nullable=True),
        sa.Column("error_b", sa.Text(), nullable=True),
        sa.Column("key_a", sa.String(length=64), nullable=True),
        sa.Column("key_b", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("regenerated", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint('participant_id', 'seq', name="uq_arena_battle_seq"),
    )
    op.create_index("ix_arena_battles_participant_id", "arena_battles", ["participant_id"])
    op.create_index("ix_arena_battles_status", "arena_battles", ["status"])
    op.create_table(
        "arena_flags",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("battle_id", sa.Integer(),
                  sa.ForeignKey("arena_battles.id", ondelete="CASCADE"), nullable=False),
        sa.Column("participant_id", sa.Integer(),
                  sa.ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("side", sa.String(length=1), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_arena_flags_battle_id", "arena_flags", ["battle_id"])
    op.create_table(
        "arena_votes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("battle_id", sa.Integer(),
                  sa.ForeignKey("arena_battles.id", ondelete="CASCADE"), nullable=False, unique=True),
        sa.Column("participant_id", sa.Integer(),
                  sa.ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False),
        sa.Column("outcome", sa.String(length=8), nullable=False),
        sa.Column("confidence", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_arena_votes_participant_id", "arena_votes", ["participant_id"])


def downgrade() -> None:
    for table in ("arena_deletions", "arena_exports", "arena_meta", "arena_flags", "arena_votes", "arena_battles",
                  "arena_questions", "arena_participants"):
        op.drop_table(table)
