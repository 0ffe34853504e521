"""The arena's tables (SQLAlchemy Core), on SQLite and PostgreSQL alike, migrated by the arena's own Alembic
chain (`arena/migrations`, version table `arena_alembic_version`), so an arena may share a PostgreSQL database
with the annotation service without either touching the other's schema.

Every row a participant made hangs off `arena_participants` by `participant_id` with ON DELETE CASCADE, so a
deletion request is one DELETE (privacy.py) and leaves nothing behind. A vote is recorded once per battle (a
unique constraint on `arena_votes.battle_id`): two submissions racing each other, in threads or processes,
store one vote and the other is told it was already counted.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

participants = Table(
    "arena_participants", metadata,
    Column("id", Integer, primary_key=True),
    #: the participant's id in the arena (random, `p-...`): what the researcher and a deletion request name
    Column("pid", String(40), nullable=False, unique=True),
    #: the crowd platform's id (PROLIFIC_PID), when the participant came from one
    Column("external_id", String(128), nullable=True, unique=True),
    #: sha256 of the session cookie's token
    Column("session_hash", String(64), nullable=False, unique=True),
    Column("csrf", String(64), nullable=False),
    Column("profile", Text, nullable=True),
    Column("consent_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Column("spend_usd", Float, nullable=False, default=0.0),
)

questions = Table(
    "arena_questions", metadata,
    Column("id", Integer, primary_key=True),
    Column("participant_id", Integer, ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False,
           index=True),
    #: own | pool | gold
    Column("source", String(8), nullable=False),
    Column("text", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

battles = Table(
    "arena_battles", metadata,
    Column("id", Integer, primary_key=True),
    #: the opaque reference pages carry (`b-...`): nothing in it tells the contestants
    Column("ref", String(40), nullable=False, unique=True),
    Column("participant_id", Integer, ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("question_id", Integer, ForeignKey("arena_questions.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("model_a", String(64), nullable=False),
    Column("model_b", String(64), nullable=False),
    #: the drawn order: True when model_a's answer is shown on the left
    Column("a_left", Boolean, nullable=False),
    Column("gold", Boolean, nullable=False, default=False),
    #: a gold battle's better answer: a | b
    Column("gold_better", String(1), nullable=True),
    Column("answer_a", Text, nullable=True),
    Column("answer_b", Text, nullable=True),
    #: per side: streaming | complete | failed
    Column("status_a", String(10), nullable=False),
    Column("status_b", String(10), nullable=False),
    Column("error_a", Text, nullable=True),
    Column("error_b", Text, nullable=True),
    #: the call cache keys of the two requests (a deletion removes those entries)
    Column("key_a", String(64), nullable=True),
    Column("key_b", String(64), nullable=True),
    #: streaming | complete | failed | dropped
    Column("status", String(10), nullable=False, index=True),
    Column("cost_usd", Float, nullable=False, default=0.0),
    Column("regenerated", Integer, nullable=False, default=0),
    #: a repeat (voter consistency): the reference of the earlier battle shown again, its sides drawn anew
    Column("repeat_of", String(40), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    UniqueConstraint("participant_id", "seq", name="uq_arena_battle_seq"),
)

votes = Table(
    "arena_votes", metadata,
    Column("id", Integer, primary_key=True),
    Column("battle_id", Integer, ForeignKey("arena_battles.id", ondelete="CASCADE"), nullable=False, unique=True),
    Column("participant_id", Integer, ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False,
           index=True),
    #: a | b | tie | both_bad (model_a's / model_b's answer, whatever side it was shown on)
    Column("outcome", String(8), nullable=False),
    Column("confidence", Integer, nullable=False),
    Column("reason", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

flags = Table(
    "arena_flags", metadata,
    Column("id", Integer, primary_key=True),
    Column("battle_id", Integer, ForeignKey("arena_battles.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("participant_id", Integer, ForeignKey("arena_participants.id", ondelete="CASCADE"), nullable=False),
    #: the flagged answer's contestant: a | b
    Column("side", String(1), nullable=False),
    Column("reason", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

#: arena-wide counters and settings that outlive a participant's deletion (spend so far, battles dropped or
#: regenerated, the pseudonym key)
meta = Table(
    "arena_meta", metadata,
    Column("key", String(40), primary_key=True),
    #: a counter (added to by `UPDATE ... SET number = number + x`, atomic under concurrent writers)
    Column("number", Float, nullable=False, default=0.0),
    Column("text", Text, nullable=True),
)

#: every export made (leaderboard, benchmark, project): a deletion's receipt lists those made before it
exports = Table(
    "arena_exports", metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String(40), nullable=False),
    Column("path", Text, nullable=False),
    Column("reveal_ids", Boolean, nullable=False, default=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

deletions = Table(
    "arena_deletions", metadata,
    Column("id", Integer, primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("battles", Integer, nullable=False),
    Column("votes", Integer, nullable=False),
    Column("cache_entries", Integer, nullable=False),
    Column("receipt", Text, nullable=False),
)
