"""Annotation accounts and sessions: users and their roles, project membership, one-time login links (a hash
stored, never the token), activation, and the browser sessions a link opens."""

from __future__ import annotations

import hashlib
import secrets
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from tailorbench.annotation import statements
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import (
    Assignment,
    Item,
    Member,
    Project,
    User,
    WebSession,
    utcnow,
)
from tailorbench.annotation.projects import NotFound, find_project
from tailorbench.errors import ConfigError, TailorError

SESSION_DAYS = 30


#: how long a new login link logs in (once) by default, and at most
LINK_DAYS = 7


MAX_LINK_DAYS = 365


ROLES = ("admin", "annotator")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def aware(stamp: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite gives them back naive)."""
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _new_link(user: User, link_days: float) -> str:
    """Give `user` a fresh login link (the previous one stops working); returns its token, shown once."""
    if not 0 < link_days <= MAX_LINK_DAYS:
        raise ConfigError(f"a login link lasts more than 0 and at most {MAX_LINK_DAYS} days, got {link_days}")
    token = secrets.token_urlsafe(24)
    user.token_hash = token_hash(token)
    user.link_expires_at = utcnow() + timedelta(days=link_days)
    user.link_used_at = None
    return token


def add_user(db: Database, name: str, role: str = "annotator", projects: list[str] | None = None,
             link_days: float = LINK_DAYS) -> tuple[int, str]:
    """Create an account; returns (user id, login token). The token is shown once, stored only hashed, and logs
    in once within `link_days`."""
    name = name.strip()
    if not name:
        raise ConfigError("annotator name must not be empty")
    if role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}")
    with db.session() as s:
        if s.scalar(select(User.id).where(User.name == name)) is not None:
            raise ConfigError(f"user {name!r} already exists (use `annotator link` for a new link)")
        user = User(name=name, role=role, active=True)
        token = _new_link(user, link_days)
        s.add(user)
        s.flush()
        for pname in projects or []:
            s.add(Member(project_id=find_project(s, pname).id, user_id=user.id))
        return user.id, token


def _user(s: Session, name: str, lock: bool = False) -> User:
    q = select(User).where(User.name == name)
    user = s.scalar(q.with_for_update() if lock else q)
    if user is None:
        raise NotFound(f"no user {name!r}")
    return user


def rotate_link(db: Database, name: str, link_days: float = LINK_DAYS) -> str:
    """A new login link for `name` (for a lost cookie, a new browser, or a leaked link): the old link and all
    their sessions stop working. Returns the token (shown once)."""
    with db.session() as s:
        user = _user(s, name, lock=True)
        token = _new_link(user, link_days)
        s.query(WebSession).filter(WebSession.user_id == user.id).delete()
    return token


@dataclass(frozen=True)
class Activation:
    """What `set_active` did: the account, and how many unfinished assignments went back to the queue."""

    user_id: int
    active: bool
    released: int


def set_active(db: Database, name: str, active: bool) -> Activation:
    """Reactivate an account, or deactivate it: their sessions end (a web process must also drop its cached
    ones: `SessionCache.drop_user`), their link stops logging in, and their unfinished assignments go back to
    the queue (finished labels stay)."""
    with db.session() as s:
        user = _user(s, name, lock=True)
        user.active = active
        released = 0
        if not active:
            s.query(WebSession).filter(WebSession.user_id == user.id).delete()
            items = s.scalars(delete(Assignment).where(Assignment.user_id == user.id, Assignment.done.is_(False))
                              .returning(Assignment.item_id)).all()
            for item_id in items:  # gold items are not counted (each goes to everyone)
                s.execute(update(Item).where(Item.id == item_id, Item.is_gold.is_(False))
                          .values(n_assigned=Item.n_assigned - 1))
            released = len(items)
        return Activation(user.id, active, released)


def list_users(db: Database) -> list[dict[str, Any]]:
    with db.session() as s:
        rows = s.execute(select(User).order_by(User.id)).scalars().all()
        members: dict[int, list[str]] = defaultdict(list)
        q = select(Member.user_id, Project.name).join(Project, Project.id == Member.project_id)
        for uid, pname in s.execute(q):
            members[uid].append(pname)
        return [{"id": u.id, "name": u.name, "role": u.role, "active": u.active, "projects": members[u.id],
                 "link_expires_at": u.link_expires_at and aware(u.link_expires_at).isoformat(),
                 "link_used_at": u.link_used_at and aware(u.link_used_at).isoformat()}
                for u in rows]


def add_member(db: Database, project: str | int, user: str) -> None:
    with db.session() as s:
        p = find_project(s, project)
        u = s.scalar(select(User).where(User.name == user))
        if u is None:
            raise NotFound(f"no user {user!r}")
        if s.get(Member, (p.id, u.id)) is None:
            s.add(Member(project_id=p.id, user_id=u.id))


class LinkRefused(TailorError):
    """A login link that does not log in; `why` is "unknown", "used", "expired" or "inactive" (`user_id`: whose
    link it is, when known)."""

    def __init__(self, why: str, user_id: int | None = None) -> None:
        super().__init__(f"login link refused: {why}")
        self.why = why
        self.user_id = user_id


def check_link(s: Session, token: str, lock: bool = False) -> User:
    """The user of a live login link (LinkRefused otherwise). Nothing changes: the confirmation page asks this;
    `lock` holds the user row for `login`."""
    q = select(User).where(User.token_hash == token_hash(token))
    user = s.scalar(q.with_for_update() if lock else q)
    if user is None:
        raise LinkRefused("unknown")
    if not user.active:
        raise LinkRefused("inactive", user.id)
    if user.link_used_at is not None:
        raise LinkRefused("used", user.id)
    if user.link_expires_at is None or aware(user.link_expires_at) <= utcnow():
        raise LinkRefused("expired", user.id)
    return user


def login(s: Session, token: str) -> tuple[str, User]:
    """Use up a live login link: (new session cookie value, user); LinkRefused otherwise. The row lock (one
    writer at a time on SQLite) makes two concurrent uses of one link log in once."""
    user = check_link(s, token, lock=True)
    user.link_used_at = utcnow()
    cookie = secrets.token_urlsafe(32)
    s.add(WebSession(id_hash=token_hash(cookie), user_id=user.id, csrf=secrets.token_urlsafe(32),
                     expires_at=utcnow() + timedelta(days=SESSION_DAYS)))
    return cookie, user


@dataclass(frozen=True)
class Identity:
    user_id: int
    name: str
    role: str
    csrf: str
    session_hash: str
    #: when the session ends (None: not known to the caller)
    expires_at: datetime | None = None


def identify(s: Session, cookie: str | None) -> Identity | None:
    """The session behind a cookie (one indexed lookup: it runs on every request)."""
    if not cookie:
        return None
    digest = token_hash(cookie)
    row = s.connection().execute(statements.IDENTIFY, {"h": digest}).first()
    if row is None:
        return None
    uid, name, role, csrf, expires = row
    expires = expires if expires.tzinfo else expires.replace(tzinfo=timezone.utc)
    if expires < utcnow():
        return None
    return Identity(uid, name, role, csrf, digest, expires)


def logout(s: Session, session_hash: str) -> None:
    s.query(WebSession).filter(WebSession.id_hash == session_hash).delete()
