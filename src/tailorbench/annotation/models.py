"""Tables of the annotation service (SQLAlchemy 2). The schema itself is created by the Alembic migrations in
`migrations/`; these classes must stay in step with them (a test compares the two).

Invariants the database enforces, so no code path can break them: one assignment per (item, annotator)
(never the same item twice to one person), one label per assignment (a double submit stores one label), one
item id per project.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class User(Base):
    """An admin or an annotator. Login is by a personal link whose token is stored only as a hash; a link logs in
    once, before `link_expires_at` (the session cookie keeps the person logged in afterwards), and a new link
    replaces the old one. An inactive account cannot log in and has no sessions."""

    __tablename__ = "tb_users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str] = mapped_column(String(20))  # "admin" | "annotator"
    #: hash of the current login link's token
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: the current link logs in until then (None: no live link)
    link_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: when the current link was used (None: not yet; a used link never logs in again)
    link_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class WebSession(Base):
    """A browser session: the cookie holds a random id, the table holds its hash and the CSRF token, so
    sessions survive a server restart and can be revoked."""

    __tablename__ = "tb_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("tb_users.id", ondelete="CASCADE"), index=True)
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Project(Base):
    __tablename__ = "tb_projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    task_type: Mapped[str] = mapped_column(String(20))
    instructions: Mapped[str] = mapped_column(Text, default="")
    n_per_item: Mapped[int] = mapped_column(Integer, default=3)
    #: one gold item after every `gold_every` regular items
    gold_every: Mapped[int] = mapped_column(Integer, default=5)
    #: next item position (import order)
    next_seq: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Member(Base):
    """Which annotators work on which project (an annotator sees only their projects)."""

    __tablename__ = "tb_members"

    project_id: Mapped[int] = mapped_column(ForeignKey("tb_projects.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("tb_users.id", ondelete="CASCADE"), primary_key=True)


class Item(Base):
    __tablename__ = "tb_items"
    __table_args__ = (
        UniqueConstraint("project_id", "ext_id", name="uq_tb_items_project_ext"),
        Index("ix_tb_items_queue", "project_id", "is_gold", "n_assigned", "seq"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("tb_projects.id", ondelete="CASCADE"))
    ext_id: Mapped[str] = mapped_column(String(300))
    seq: Mapped[int] = mapped_column(Integer)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    is_gold: Mapped[bool] = mapped_column(Boolean, default=False)
    gold: Mapped[Any] = mapped_column(JSON, nullable=True)
    #: a regular item's assignments so far, what N caps (kept in step with tb_assignments in the same
    #: transaction); not counted for gold items, which go to every annotator
    n_assigned: Mapped[int] = mapped_column(Integer, default=0)
    source: Mapped[str] = mapped_column(String(500), default="")


class Assignment(Base):
    __tablename__ = "tb_assignments"
    __table_args__ = (
        UniqueConstraint("item_id", "user_id", name="uq_tb_assignments_item_user"),
        Index("ix_tb_assignments_user_open", "user_id", "project_id", "done"),
        Index("ix_tb_assignments_ref", "ref", unique=True, postgresql_where=text("ref IS NOT NULL"),
              sqlite_where=text("ref IS NOT NULL")),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("tb_projects.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("tb_items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("tb_users.id", ondelete="CASCADE"))
    #: the randomised presentation, recorded: {"swap": bool} (answers shown in the other order when true)
    layout: Mapped[dict[str, Any]] = mapped_column(JSON)
    is_gold: Mapped[bool] = mapped_column(Boolean, default=False)
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    #: when the assignment was made, i.e. first served (the server's timing of a label starts here)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: a study participant's opaque reference to it (their URLs and pages carry this, never an id); unique
    #: where set, indexed only where set (a partial index: annotators' assignments never touch it)
    ref: Mapped[str | None] = mapped_column(String(32), nullable=True)


class Label(Base):
    __tablename__ = "tb_labels"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(
        ForeignKey("tb_assignments.id", ondelete="CASCADE"), unique=True
    )
    project_id: Mapped[int] = mapped_column(ForeignKey("tb_projects.id", ondelete="CASCADE"), index=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("tb_items.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("tb_users.id", ondelete="CASCADE"), index=True)
    #: canonical value (answer positions as stored, never as shown), see tasks.py
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    note: Mapped[str] = mapped_column(Text, default="")
    #: the client's own figure (the page's script; a form field, so forgeable)
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: the server's: from the assignment being made (served) to this label (None for labels stored before)
    server_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    submitted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Study(Base):
    """A project opened to a crowd platform that sends participants by redirect (Prolific by default): one study
    link whose secret is stored only hashed, a quota of items per participant, a cap on participants, a time
    limit after which an unfinished participant's items go back to the queue, and the platform's completion
    URL and codes (see studies.py)."""

    __tablename__ = "tb_studies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("tb_projects.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: items (gold included) one participant gets at most
    quota: Mapped[int] = mapped_column(Integer)
    #: participants working or finished at most (timed-out, returned and screened-out ones free their place)
    max_participants: Mapped[int] = mapped_column(Integer)
    #: minutes from entering after which an unfinished participant's open assignments are released
    time_limit_min: Mapped[int] = mapped_column(Integer)
    #: where a participant is sent when done; "{code}" is replaced by the completion (or screen-out) code
    completion_url: Mapped[str] = mapped_column(String(1000))
    completion_code: Mapped[str] = mapped_column(String(100))
    screenout_code: Mapped[str | None] = mapped_column(String(100), nullable=True)
    #: screen-out rule: mean gold score below this after `screenout_after_gold` gold items
    screenout_gold_below: Mapped[float | None] = mapped_column(Float, nullable=True)
    screenout_after_gold: Mapped[int] = mapped_column(Integer, default=2)
    #: the URL parameters the platform fills in (Prolific: PROLIFIC_PID, STUDY_ID, SESSION_ID)
    param_id: Mapped[str] = mapped_column(String(100))
    param_study: Mapped[str] = mapped_column(String(100))
    param_session: Mapped[str] = mapped_column(String(100))
    #: the researcher's own consent and information text, shown on the consent page above the service's
    consent: Mapped[str] = mapped_column(Text, default="")
    is_open: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: the link's secret, kept so the researcher can see the study URL again (None: a study made before it was)
    link_secret: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: the seed of every participant's gold schedule (which gold items, at which positions; studies.py)
    gold_seed: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Participant(Base):
    """One platform participant in a study, with the account made for them (role "participant"): the platform's
    ids as they came in the link, when they consented, and where they stand."""

    __tablename__ = "tb_participants"
    __table_args__ = (
        UniqueConstraint("study_id", "external_id", name="uq_tb_participants_study_external"),
        Index("ix_tb_participants_study_status", "study_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("tb_studies.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("tb_users.id", ondelete="CASCADE"), unique=True)
    #: the platform's participant id (Prolific: PROLIFIC_PID)
    external_id: Mapped[str] = mapped_column(String(100))
    external_study_id: Mapped[str] = mapped_column(String(100), default="")
    external_session_id: Mapped[str] = mapped_column(String(100), default="")
    #: "active" | "finished" | "screened_out" | "timed_out" | "returned"
    status: Mapped[str] = mapped_column(String(20))
    consent_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: when their open assignments went back to the queue (timed out or returned)
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
