"""Annotation work: who gets which item next, what a submission stores, and the page an assignment shows.

Assignment rule: an annotator asks for work and gets, in this order, (1) their oldest unfinished assignment
(resume), (2) a gold item when one is due (one after every `gold_every` regular items, the rest once regular
work runs out), (3) the regular item with the fewest assignments so far (ties: import order) that they have
not had and that has fewer than N assignments. Items therefore fill breadth-first and evenly; the database's
unique (item, annotator) constraint makes a second assignment of an item to the same person impossible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import exists, func, select, text, update
from sqlalchemy.orm import Session

from tailorbench.annotation import counts, statements, tasks
from tailorbench.annotation.accounts import aware
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import (
    Assignment,
    Item,
    Project,
    utcnow,
)
from tailorbench.annotation.projects import NotFound, find_project


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
    ms = int((submitted_at - aware(served_at)).total_seconds() * 1000)
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
