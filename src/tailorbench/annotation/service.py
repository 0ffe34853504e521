"""The annotation service's logic, shared by the web app and the CLI (the Python API of `tailor annotate`).

Assignment rule: an annotator asks for work and gets, in this order, (1) their oldest unfinished assignment
(resume), (2) a gold item when one is due (one after every `gold_every` regular items, the rest once regular
work runs out), (3) the regular item with the fewest assignments so far (ties: import order) that they have
not had and that has fewer than N assignments. Items therefore fill breadth-first and evenly; the database's
unique (item, annotator) constraint makes a second assignment of an item to the same person impossible.
"""

from __future__ import annotations

import csv
import hashlib
import secrets
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import delete, exists, func, insert, select, text, update
from sqlalchemy.orm import Session

from tailorbench.agreement.ratings import Rating, RatingSet, write_ratings_jsonl
from tailorbench.annotation import counts, statements, tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.importer import read_import
from tailorbench.annotation.models import (
    Assignment,
    Item,
    Label,
    Member,
    Participant,
    Project,
    Study,
    User,
    WebSession,
    utcnow,
)
from tailorbench.errors import ConfigError, DataError, TailorError
from tailorbench.files import Output

SESSION_DAYS = 30
#: how long a new login link logs in (once) by default, and at most
LINK_DAYS = 7
MAX_LINK_DAYS = 365
ROLES = ("admin", "annotator")


class NotFound(TailorError):
    """The thing does not exist or does not belong to the asking user (both look the same to them)."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


# --- users and sessions -----------------------------------------------------------------------------


def _aware(stamp: datetime) -> datetime:
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
                 "link_expires_at": u.link_expires_at and _aware(u.link_expires_at).isoformat(),
                 "link_used_at": u.link_used_at and _aware(u.link_used_at).isoformat()}
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
    if user.link_expires_at is None or _aware(user.link_expires_at) <= utcnow():
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


# --- projects and imports ---------------------------------------------------------------------------


def find_project(s: Session, name_or_id: str | int) -> Project:
    """A project by name or id, or NotFound."""
    if isinstance(name_or_id, int):
        p = s.get(Project, name_or_id)
    else:
        p = s.scalar(select(Project).where(Project.name == name_or_id))
    if p is None:
        raise NotFound(f"no project {name_or_id!r}")
    return p


def create_project(db: Database, name: str, task_type: str, n_per_item: int = 3, instructions: str = "",
                   gold_every: int = 5) -> int:
    """A new project; returns its id."""
    task = tasks.check_task_type(task_type)  # ConfigError naming the registered types
    if not name.strip():
        raise ConfigError("project name must not be empty")
    if n_per_item < 1 or gold_every < 1:
        raise ConfigError("annotators per item and gold interval must be at least 1")
    with db.session() as s:
        if s.scalar(select(Project.id).where(Project.name == name)) is not None:
            raise ConfigError(f"project {name!r} already exists")
        p = Project(name=name, task_type=task, n_per_item=n_per_item, instructions=instructions,
                    gold_every=gold_every, next_seq=0)
        s.add(p)
        s.flush()
        return p.id


def list_projects(db: Database, user_id: int | None = None) -> list[dict[str, Any]]:
    """All projects (admin) or the projects `user_id` is a member of."""
    with db.session() as s:
        q = select(Project).order_by(Project.id)
        if user_id is not None:
            q = q.join(Member, Member.project_id == Project.id).where(Member.user_id == user_id)
        return [{"id": p.id, "name": p.name, "task_type": p.task_type, "n_per_item": p.n_per_item,
                 "instructions": p.instructions} for p in s.scalars(q)]


#: items inserted per statement by `import_items` (and the step of its progress reports)
IMPORT_BATCH = 1000


def import_items(db: Database, project: str | int, path: str | Path, fmt: str = "auto",
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Read and check the whole file, then insert every item in one transaction (all or nothing).
    `progress(rows read, rows stored)` is called while the file is read, once it is read and checked (nothing
    stored yet, no transaction open) and after every batch of `IMPORT_BATCH` stored rows."""
    with db.session() as s:
        task = tasks.task_type(find_project(s, project).task_type)
    used, items = read_import(path, task, fmt, None if progress is None else lambda n: progress(n, 0))
    if progress is not None:
        progress(len(items), 0)
    source = Path(path).name
    with db.session() as s:
        p = s.get(Project, find_project(s, project).id, with_for_update=True)
        assert p is not None
        ids = [it.ext_id for it in items]
        existing: set[str] = set()
        for start in range(0, len(ids), 500):
            existing.update(s.scalars(select(Item.ext_id).where(Item.project_id == p.id,
                                                                Item.ext_id.in_(ids[start:start + 500]))))
        for it in items:
            if it.ext_id in existing:
                raise DataError(path, it.line, "id", f"item {it.ext_id!r} is already in project {p.name!r}")
        seq = p.next_seq
        for start in range(0, len(items), IMPORT_BATCH):
            s.execute(insert(Item), [
                {"project_id": p.id, "ext_id": it.ext_id, "seq": seq + start + i, "payload": it.payload,
                 "is_gold": it.gold is not None, "gold": it.gold, "n_assigned": 0, "source": f"{source}:{it.line}"}
                for i, it in enumerate(items[start:start + IMPORT_BATCH])])
            if progress is not None:
                progress(len(items), min(start + IMPORT_BATCH, len(items)))
        p.next_seq = seq + len(items)
    n_gold = sum(it.gold is not None for it in items)
    return {"project": str(project), "format": used, "items": len(items) - n_gold, "gold_items": n_gold}


# --- assignment and submission ----------------------------------------------------------------------


def _member_project(s: Session, user_id: int, project_id: int) -> tuple[str, int, int]:
    """(task type, N, gold interval) of a project the user is a member of; NotFound otherwise."""
    row = s.connection().execute(statements.MEMBER_PROJECT, {"p": project_id, "u": user_id}).first()
    if row is None:
        raise NotFound("no such project")
    return row[0], row[1], row[2]


def gold_due(n_regular: int, n_gold: int, gold_every: int) -> bool:
    """Whether the annotator's next item is a gold one: after every `gold_every` regular assignments (both
    counts over all their assignments in the project, finished or not)."""
    return n_regular >= (n_gold + 1) * gold_every


#: the longest note a label keeps (the task pages' note field says the same)
MAX_NOTE_CHARS = 2000
#: the longest time on one item that is stored (a day): more is a broken or forged form
MAX_DURATION_MS = 86_400_000


def unstorable_field(form: Mapping[str, str]) -> str | None:
    """The first form field whose text a database cannot store (NUL: PostgreSQL refuses it in text columns,
    and SQLite would cut it short in some drivers), or None; a form holding one is refused whole."""
    for key, value in form.items():
        if "\x00" in value or "\x00" in key:
            return key.replace("\x00", "")
    return None


def label_fields(form: Mapping[str, str]) -> tuple[bool, str, int | None]:
    """(flagged, note, duration in ms) of a submitted task form, stored with every label; both submission
    paths call it after the task type's `parse_form`. An empty duration (no script ran) is stored as unknown;
    a note over MAX_NOTE_CHARS or a duration that is not a whole number of ms in 0..MAX_DURATION_MS is a
    FormError (422, nothing stored)."""
    bad = unstorable_field(form)
    if bad is not None:
        raise tasks.FormError(f"the field {bad!r} contains a NUL character, which cannot be stored")
    note = (form.get("note") or "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise tasks.FormError(f"the note is {len(note):,} characters long; at most {MAX_NOTE_CHARS:,} are kept")
    raw = (form.get("elapsed_ms") or "").strip()
    duration: int | None = None
    if raw:
        if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_DURATION_MS))
                and int(raw) <= MAX_DURATION_MS):
            raise tasks.FormError(f"elapsed_ms must be a whole number of milliseconds from 0 to {MAX_DURATION_MS}")
        duration = int(raw)
    return (form.get("flag") or "") in ("1", "on", "true"), note, duration


#: the largest duration an Integer column holds (ms, about 24.8 days)
MAX_STORED_MS = 2**31 - 1


def server_ms(served_at: datetime | None, submitted_at: datetime) -> int | None:
    """The server's own time on one item: from the assignment being made (first served) to its label, in ms
    (the client's `elapsed_ms` is a form field anyone can set; this one is not)."""
    if served_at is None:
        return None
    ms = int((submitted_at - _aware(served_at)).total_seconds() * 1000)
    return max(0, min(ms, MAX_STORED_MS))


@dataclass(frozen=True)
class Current:
    """An annotator's current assignment."""

    id: int
    layout: dict[str, Any]
    #: labels the annotator has finished in this project, when known without another query
    done_count: int | None = None
    #: (item ext id, payload) of a newly made assignment (what its page shows, without another query)
    item: tuple[str, dict[str, Any]] | None = None


def next_assignment(s: Session, user_id: int, project_id: int, lazy_commit: bool = True,
                    project: tuple[str, int, int] | None = None, gold: bool = True) -> Current | None:
    """The annotator's current assignment: resume an open one, else make one (see the module docstring);
    None when nothing is left for them. Prebuilt statements (statements.py): this runs on every task page.
    `lazy_commit` (PostgreSQL): a transaction that only makes an assignment need not wait for the WAL flush;
    pass False when the same transaction also stores a label. `project`: (task type, N, gold interval) when the
    caller has just read them from the user's own assignment in this project. `gold=False`: regular items only
    (a crowd study places its participants' gold items itself, studies.py). (The web app's submissions make
    the next assignment by the same rules in plain SQL: `submit_sql.py`.)"""
    conn = s.connection()
    ids = {"u": user_id, "p": project_id}
    found = conn.execute(statements.OPEN_ASSIGNMENT, ids).first()
    if found is not None:
        return Current(found[0], found[1])
    task, n_per_item, gold_every = project or _member_project(s, user_id, project_id)
    n_regular = n_gold = n_done = 0
    for is_gold, done, n in conn.execute(statements.MY_COUNTS, ids):
        n_gold += n if is_gold else 0
        n_regular += 0 if is_gold else n
        n_done += n if done else 0
    # Gold items go to everyone: no lock, no count (the unique (item, annotator) constraint is all a gold
    # assignment needs), so another annotator's transaction never hides one. Regular items, on PostgreSQL: the
    # job-queue pattern; concurrent annotators lock different items instead of queueing on one, and
    # `n_assigned < N` is re-checked on the locked row, so N is never exceeded; only when that finds nothing
    # does the pick wait for the rows others hold (their free slots may outlast those transactions), so
    # "nothing left" is never said of a slot still open. (SQLite transactions are exclusive: BEGIN IMMEDIATE.)
    locked = conn.dialect.name != "sqlite"
    regular_q = statements.REGULAR_ITEM_LOCKED if locked else statements.REGULAR_ITEM
    regular = {**ids, "n": n_per_item}
    due = gold and gold_due(n_regular, n_gold, gold_every)
    item = conn.execute(statements.GOLD_ITEM, ids).first() if due else None
    if item is None:
        item = conn.execute(regular_q, regular).first()
    if item is None and not due and gold:
        item = conn.execute(statements.GOLD_ITEM, ids).first()
    if item is None and locked:
        item = conn.execute(statements.REGULAR_ITEM_WAIT, regular).first()
    if item is None:
        return None
    layout = tasks.task_type(task).new_layout()
    if locked and lazy_commit:
        conn.execute(statements.NO_SYNC_COMMIT)
    new_id = conn.execute(statements.NEW_ASSIGNMENT, {
        "project_id": project_id, "item_id": item[0], "user_id": user_id, "layout": layout, "is_gold": item[1],
        "done": False, "created_at": utcnow()}).scalar_one()
    if not item[1]:
        conn.execute(statements.COUNT_ASSIGNED, {"i": item[0]})
    return Current(new_id, layout, n_done, (item[2], item[3]))


def my_counts(s: Session, user_id: int, project_id: int) -> dict[str, int]:
    """An annotator's own numbers: done, and still available to them (open + not yet assigned)."""
    done = s.scalar(select(func.count()).select_from(Assignment).where(
        Assignment.user_id == user_id, Assignment.project_id == project_id, Assignment.done.is_(True))) or 0
    open_ = s.scalar(select(func.count()).select_from(Assignment).where(
        Assignment.user_id == user_id, Assignment.project_id == project_id, Assignment.done.is_(False))) or 0
    p = s.get(Project, project_id)
    n = p.n_per_item if p else 0
    not_mine = ~exists().where(Assignment.item_id == Item.id, Assignment.user_id == user_id)
    free = s.scalar(select(func.count()).select_from(Item).where(
        Item.project_id == project_id, not_mine, (Item.n_assigned < n) | Item.is_gold.is_(True))) or 0
    return {"done": done, "available": open_ + free}


def assignment_project(s: Session, assignment_id: int) -> int:
    a = s.get(Assignment, assignment_id)
    if a is None:
        raise NotFound("no such assignment")
    return a.project_id


def _assignment_row(s: Session, user_id: int, assignment_id: int, lock: bool = False) -> Any:
    stmt = statements.ASSIGNMENT_ROW_LOCKED if lock else statements.ASSIGNMENT_ROW
    row = s.connection().execute(stmt, {"a": assignment_id}).first()
    if row is None or row.user_id != user_id:
        raise NotFound("no such assignment")
    return row


def release_stale(db: Database, project: str | int, older_than_s: float) -> int:
    """Take back unfinished assignments older than `older_than_s` (an annotator who stopped half-way holds a
    slot of N); the items go back to the queue. Finished work is never touched. Returns how many."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    with db.session() as s:
        p = find_project(s, project)
        s.execute(select(Project.id).where(Project.id == p.id).with_for_update())
        stale = s.scalars(select(Assignment).where(Assignment.project_id == p.id, Assignment.done.is_(False),
                                                   Assignment.created_at < cutoff)).all()
        for a in stale:
            if not a.is_gold:  # gold items are not counted (each goes to everyone)
                s.execute(update(Item).where(Item.id == a.item_id).values(n_assigned=Item.n_assigned - 1))
            s.delete(a)
        return len(stale)


@dataclass(frozen=True)
class Submitted:
    project_id: int
    duplicate: bool


def submit(s: Session, user_id: int, assignment_id: int, form: Mapping[str, str]) -> Submitted:
    """Store one label for the annotator's own assignment in the caller's transaction. A second submit of a
    finished assignment stores nothing and reports `duplicate` (the row lock makes concurrent ones wait).
    The web app's submissions take the same steps in plain SQL (`submit_sql.py`), with the next assignment."""
    row = _assignment_row(s, user_id, assignment_id, lock=True)
    if row.done:
        return Submitted(row.project_id, True)
    value = tasks.task_type(row.task_type).parse_form(row.payload, row.layout, form)
    flagged, note, duration = label_fields(form)
    conn = s.connection()
    now = utcnow()
    conn.execute(statements.NEW_LABEL, {
        "assignment_id": assignment_id, "project_id": row.project_id, "item_id": row.item_id, "user_id": user_id,
        "value": value, "flagged": flagged, "note": note, "duration_ms": duration,
        "server_ms": server_ms(row.created_at, now), "submitted_at": now})
    conn.execute(statements.CLOSE_ASSIGNMENT, {"a": assignment_id})
    return Submitted(row.project_id, False)


def assignment_view(s: Session, user_id: int, assignment_id: int, done_count: int | None = None,
                    quota: int | None = None) -> dict[str, Any]:
    """Everything a task page needs for the annotator's own assignment (404 for anyone else's), with their place
    in the project (counts.py: one query for their side of it; `quota`: their number of items, when they have
    one, e.g. a study participant's). `done_count` is no longer needed (the same query counts it) and is
    ignored."""
    row = _assignment_row(s, user_id, assignment_id)
    conn = s.connection()
    done = unfinished = 0
    for _gold, finished, n in conn.execute(statements.MY_COUNTS, {"u": user_id, "p": row.project_id}):
        done += n if finished else 0
        unfinished += 0 if finished else n
    free = counts.remaining(conn.engine).free(row.project_id, user_id, row.n_per_item, done + unfinished,
                                              lambda sql, params: conn.execute(text(sql), params).scalar_one())
    return task_view(assignment_id, row.done, row, row.ext_id, row.payload, row.layout, done,
                     counts.place(done, unfinished, free, quota))


def task_view(assignment_id: int, done: bool, project_row: Any, ext_id: str, payload: dict[str, Any],
              layout: dict[str, Any], done_count: int, place: counts.Place | None = None) -> dict[str, Any]:
    """What a task page shows (`assignment_view`'s dict), from the project's columns (`project_id`, `name`,
    `task_type`, `instructions` attributes of `project_row`) and the item and assignment; shared with the
    plain-SQL submission path (submit_sql.py). `place`: the annotator's "item X of N" (counts.py); without it
    the page shows only how many they have done. `persona`: the item's profile as stored (the page shows it
    in sections)."""
    p = project_row
    project = {"id": p.project_id, "name": p.name, "task_type": p.task_type, "instructions": p.instructions}
    persona = payload.get("persona")
    return {"assignment": {"id": assignment_id, "done": done}, "project": project, "item_id": ext_id,
            "done_count": done_count, "place": place, "persona": persona if isinstance(persona, dict) else None,
            "view": tasks.task_type(p.task_type).view(payload, layout)}


# --- admin: progress, agreement, flags, export ------------------------------------------------------


def progress(db: Database, project: str | int) -> dict[str, Any]:
    """Progress of a project overall and per annotator, with each annotator's gold score. Per annotator,
    `assigned` and `done` count every item, gold included (`gold_done` of them gold); the project's
    `labels_done` counts the labels of regular items, towards `labels_needed` (regular items x N)."""
    with db.session() as s:
        p = find_project(s, project)
        n_items = s.scalar(select(func.count()).select_from(Item).where(Item.project_id == p.id,
                                                                        Item.is_gold.is_(False))) or 0
        n_gold = s.scalar(select(func.count()).select_from(Item).where(Item.project_id == p.id,
                                                                       Item.is_gold.is_(True))) or 0
        per_item = Counter(s.scalars(select(Label.item_id).join(Item, Item.id == Label.item_id).where(
            Label.project_id == p.id, Item.is_gold.is_(False))))
        per_user: dict[int, dict[str, Any]] = {}
        for uid, name in s.execute(select(User.id, User.name).join(Member, Member.user_id == User.id)
                                   .where(Member.project_id == p.id).order_by(User.name)):
            per_user[uid] = {"annotator": name, "assigned": 0, "done": 0, "gold_done": 0, "gold_score": None,
                             "flagged": 0, "last_submission": None}
        for uid, done, n in s.execute(
            select(Assignment.user_id, Assignment.done, func.count())
            .where(Assignment.project_id == p.id).group_by(Assignment.user_id, Assignment.done)
        ):
            row = per_user.setdefault(uid, {"annotator": str(uid), "assigned": 0, "done": 0, "gold_done": 0,
                                            "gold_score": None, "flagged": 0, "last_submission": None})
            # one definition of "done" everywhere: finished items, gold included (as a study's quota and the
            # quality block count them); `gold_done` says how many of them were gold
            row["assigned"] += n
            row["done"] += n if done else 0
        scores: dict[int, list[float]] = defaultdict(list)
        task = tasks.task_type(p.task_type)
        for label, item in s.execute(select(Label, Item).join(Item, Item.id == Label.item_id)
                                     .where(Label.project_id == p.id)):
            row = per_user[label.user_id]
            row["flagged"] += label.flagged
            stamp = label.submitted_at.isoformat()
            row["last_submission"] = max(row["last_submission"] or stamp, stamp)
            if item.is_gold:
                scores[label.user_id].append(task.gold_score(item.gold, label.value))
        for uid, vals in scores.items():
            per_user[uid]["gold_done"] = len(vals)
            per_user[uid]["gold_score"] = sum(vals) / len(vals)
        labels_done = sum(per_item.values())
        return {
            "project": p.name,
            "task_type": p.task_type,
            "n_per_item": p.n_per_item,
            "items": n_items,
            "gold_items": n_gold,
            "labels_needed": n_items * p.n_per_item,
            "labels_done": labels_done,
            "items_complete": sum(1 for n in per_item.values() if n >= p.n_per_item),
            "percent_done": round(100.0 * labels_done / (n_items * p.n_per_item), 1) if n_items else 0.0,
            "annotators": list(per_user.values()),
        }


def ratings(db: Database, project: str | int, include_gold: bool = False) -> RatingSet:
    """The project's labels in the long rating format (rater = annotator name, group = human)."""
    with db.session() as s:
        p = find_project(s, project)
        q = (select(Item.ext_id, User.name, Label.value).join(Item, Item.id == Label.item_id)
             .join(User, User.id == Label.user_id).where(Label.project_id == p.id).order_by(Item.seq, User.name))
        if not include_gold:
            q = q.where(Item.is_gold.is_(False))
        out = RatingSet(sources=[f"annotation project {p.name}"])
        task = tasks.task_type(p.task_type)
        for ext_id, rater, value in s.execute(q):
            for item, label in task.to_ratings(ext_id, value):
                out.ratings.append(Rating(item, rater, label, "human", out.sources[0], None))
        return out


def agreement_so_far(db: Database, project: str | int, resamples: int = 200) -> dict[str, Any]:
    """The agreement report (agreement/) of the labels so far, or a note saying why there is none yet."""
    from tailorbench.agreement.report import AgreeOptions, agreement_report

    with db.session() as s:
        task = tasks.task_type(find_project(s, project).task_type)
    rs = ratings(db, project)
    per_item = Counter(r.item for r in rs.ratings)
    if len({r.rater for r in rs.ratings}) < 2 or not any(n >= 2 for n in per_item.values()):
        return {"available": False, "note": "agreement needs at least one item rated by two annotators"}
    try:
        report = agreement_report(rs, task.agreement_order, AgreeOptions(n_resamples=resamples))
    except TailorError as exc:
        return {"available": False, "note": str(exc)}
    return {"available": True, "n_ratings": len(rs.ratings), "report": report}


def flagged(db: Database, project: str | int) -> list[dict[str, Any]]:
    with db.session() as s:
        p = find_project(s, project)
        q = (select(Item.ext_id, User.name, Label.note, Label.submitted_at).join(Item, Item.id == Label.item_id)
             .join(User, User.id == Label.user_id).where(Label.project_id == p.id, Label.flagged.is_(True))
             .order_by(Label.submitted_at))
        return [{"item": i, "annotator": u, "note": n, "submitted_at": t.isoformat()} for i, u, n, t in s.execute(q)]


def items_records(db: Database, project: str | int) -> list[dict[str, Any]]:
    """The project's items as imported (pairwise: the items format `tailor tiers --items` reads)."""
    with db.session() as s:
        p = find_project(s, project)
        out = []
        for item in s.scalars(select(Item).where(Item.project_id == p.id).order_by(Item.seq)):
            rec = dict(item.payload)
            if item.is_gold:
                rec["gold"] = item.gold
            out.append(rec)
        return out


NO_PLATFORM_IDS: dict[str, str | None] = {"external_id": None, "external_study_id": None,
                                          "external_session_id": None}


def platform_ids(s: Session, project_id: int) -> dict[int, dict[str, str | None]]:
    """{user id: external_id, external_study_id, external_session_id} of the project's study participants,
    for the exports."""
    q = (select(Participant.user_id, Participant.external_id, Participant.external_study_id,
                Participant.external_session_id).join(Study, Study.id == Participant.study_id)
         .where(Study.project_id == project_id))
    return {uid: {"external_id": e, "external_study_id": st, "external_session_id": se}
            for uid, e, st, se in s.execute(q)}


def raw_labels(db: Database, project: str | int) -> list[dict[str, Any]]:
    """Every label with what the long format cannot hold: shown order, notes, flags, timing, gold, and a crowd
    study participant's platform ids (`external_id`, `external_study_id`, `external_session_id`; None else)."""
    with db.session() as s:
        p = find_project(s, project)
        task = tasks.task_type(p.task_type)
        crowd = platform_ids(s, p.id)
        q = (select(Label, Item, User, Assignment).join(Item, Item.id == Label.item_id)
             .join(User, User.id == Label.user_id).join(Assignment, Assignment.id == Label.assignment_id)
             .where(Label.project_id == p.id).order_by(Label.id))
        out = []
        for label, item, user, a in s.execute(q):
            out.append({"item": item.ext_id, "rater": user.name, "task_type": p.task_type, "value": label.value,
                        "shown_order": task.shown_order(a.layout),
                        "gold": item.gold if item.is_gold else None, "flagged": label.flagged, "note": label.note,
                        "duration_ms": label.duration_ms, "server_ms": label.server_ms,
                        "submitted_at": label.submitted_at.isoformat(),
                        **crowd.get(user.id, NO_PLATFORM_IDS)})
        return out


def write_ratings_csv(rs: RatingSet, out: Output, name: str) -> None:
    with out.writing(name) as handle:
        w = csv.writer(handle)
        w.writerow(["item", "rater", "label", "group"])
        for r in rs.ratings:
            w.writerow([r.item, r.rater, r.label, r.group])


def export(db: Database, project: str | int, out_dir: str | Path, include_gold: bool = False,
           min_ratings: int | None = None, easy: float = 0.75, medium: float = 0.6) -> dict[str, Any]:
    """Write ratings.jsonl / ratings.csv (long format), items.jsonl, labels.jsonl (raw) and the task type's own
    files (pairwise: benchmark.jsonl, PairCase with majority labels and agreement tiers, plus tiers.json)."""
    door = Output("--out", Path(out_dir), directory=True, made_by="tailor annotate export")
    out = door.ensure()
    rs = ratings(db, project, include_gold=include_gold)
    write_ratings_jsonl(rs.ratings, door.path("ratings.jsonl"))
    write_ratings_csv(rs, door, "ratings.csv")
    items = items_records(db, project)
    door.write_jsonl("items.jsonl", items)
    door.write_jsonl("labels.jsonl", raw_labels(db, project))
    files = ["ratings.jsonl", "ratings.csv", "items.jsonl", "labels.jsonl"]
    summary: dict[str, Any] = {"out": str(out), "ratings": len(rs.ratings), "items": len(items)}
    with db.session() as s:
        p = find_project(s, project)
        task, n = tasks.task_type(p.task_type), p.n_per_item
    summary.update(task.export_extra(out, rs, tasks.ExportOptions(n, min_ratings, easy, medium)))
    files += task.export_files
    summary["files"] = files
    summary["exported_at"] = datetime.now(timezone.utc).isoformat()
    return summary
