"""The web app's submission path in plain SQL on the driver's connection (sqlite3 or psycopg), without the ORM.

Every label the web app receives goes through `SubmitSQL.submit_and_next`: store it, close the assignment, make
the annotator's next assignment and return what its page shows, in one transaction. Profiling under load showed
the server CPU-bound in Python, most of it in SQLAlchemy's per-statement work (about 100 µs per statement on top
of the driver's, for 8–9 statements per submission), so this path runs a few fixed SQL strings with bound
parameters straight on the pooled DBAPI connection:

- PostgreSQL: two statements. (1) The submitted assignment, locked (`FOR UPDATE`: a concurrent double submit
  waits here and then sees `done`), with its item's page data, the project's settings, the annotator's counts and
  any other open assignment of theirs. (2) After the form is checked in Python, one statement with
  data-modifying CTEs: insert the label, close the assignment, pick the next item, insert its assignment and,
  for a regular item, count it. A regular item is picked `FOR NO KEY UPDATE SKIP LOCKED` (the job-queue
  pattern: `n_assigned < N` is re-checked on the locked row). The lock is NO KEY UPDATE, the one the
  `n_assigned` update takes anyway, not FOR UPDATE: the foreign key checks of other submissions' inserts take
  KEY SHARE on their items, which FOR UPDATE would block, and within one statement the order of those checks
  and the pick is not fixed, so FOR UPDATE deadlocks (it did, in the concurrency test); NO KEY UPDATE still
  keeps two pickers off the same row. A gold item goes to every annotator: it is picked without a lock and
  not counted (nothing caps it; the unique (item, annotator) constraint is all it needs), so another
  annotator's transaction never hides it (under `SKIP LOCKED` it did: annotators were told they were done
  with gold items unseen) and nobody queues on it.
- SQLite: the same steps as separate statements (in-process, each a few µs) inside `BEGIN IMMEDIATE`.

The rules are those of `service.next_assignment` (resume, gold when due, the regular item with the fewest
assignments, then gold): the decisions made in Python come from `service` itself (`service.gold_due`,
`service.label_fields`, `service.task_view`), the item order is written once more here in SQL, and
tests/annotation/test_submit_sql.py drives this path and `service` through the same events and compares the two
databases afterwards. The database's constraints stay the source of truth: one label per assignment, one
assignment per (item, annotator). Anything unusual (a duplicate submit, a resumed older assignment, nothing left)
goes back to the ORM functions in `service`, which are the reference; "nothing left" among them, which on
PostgreSQL waits for the regular items other transactions hold before it says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tailorbench.annotation import counts, tasks
from tailorbench.annotation.assignment import gold_due, label_fields, server_ms, task_view
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Label, utcnow


class Gone(Exception):
    """No such assignment for this user (the caller turns it into its own not-found)."""


class Conflict(Exception):
    """A constraint refused the write (a concurrent twin of this submission won): nothing was stored."""


def _pg(sql: str) -> str:
    """`:name` placeholders (sqlite3) -> `%(name)s` (psycopg); `::type` casts are left alone."""
    return re.sub(r"(?<![:\w]):([a-z_]\w*)", r"%(\1)s", sql)


_ROW = """
SELECT a.user_id, a.project_id, a.item_id, a.layout, a.done, a.created_at, i.payload, i.ext_id,
       p.task_type, p.name, p.instructions, p.n_per_item, p.gold_every,
       (SELECT count(*) FROM tb_assignments m
         WHERE m.user_id = :u AND m.project_id = a.project_id AND NOT m.is_gold) AS n_regular,
       (SELECT count(*) FROM tb_assignments m
         WHERE m.user_id = :u AND m.project_id = a.project_id AND m.is_gold) AS n_gold,
       (SELECT count(*) FROM tb_assignments m
         WHERE m.user_id = :u AND m.project_id = a.project_id AND m.done) AS n_done,
       (SELECT min(o.id) FROM tb_assignments o
         WHERE o.user_id = :u AND o.project_id = a.project_id AND NOT o.done AND o.id <> a.id) AS open_id
FROM tb_assignments a
JOIN tb_items i ON i.id = a.item_id
JOIN tb_projects p ON p.id = a.project_id
WHERE a.id = :a"""

_NOT_MINE = "NOT EXISTS (SELECT 1 FROM tb_assignments x WHERE x.item_id = it.id AND x.user_id = :u)"
#: the next item: gold (import order) or regular (fewest assignments, then import order), never one of mine;
#: `is_gold = true/false`, never `NOT is_gold`: SQLite uses the queue index only for an equality
_PICK = {
    True: f"""SELECT it.id, it.is_gold, it.ext_id, it.payload FROM tb_items it
WHERE it.project_id = :p AND it.is_gold = true AND {_NOT_MINE}
ORDER BY it.seq LIMIT 1""",
    False: f"""SELECT it.id, it.is_gold, it.ext_id, it.payload FROM tb_items it
WHERE it.project_id = :p AND it.is_gold = false AND it.n_assigned < :n AND {_NOT_MINE}
ORDER BY it.n_assigned, it.seq LIMIT 1""",
}
_LABEL_COLS = ("assignment_id, project_id, item_id, user_id, value, flagged, note, duration_ms, server_ms, "
               "submitted_at")
_ASSIGN_COLS = "project_id, item_id, user_id, layout, is_gold, done, created_at"

# --- PostgreSQL ---------------------------------------------------------------------------------------

PG_ROW = _pg(_ROW + "\nFOR UPDATE OF a")
_PG_STORE = f"""lab AS (
  INSERT INTO tb_labels ({_LABEL_COLS})
  VALUES (:a, :p, :i, :u, :value::json, :flagged, :note, :dur, :server_ms, :now) RETURNING assignment_id),
cls AS (UPDATE tb_assignments SET done = true WHERE id IN (SELECT assignment_id FROM lab))"""


def _pg_assign(gold: bool) -> str:
    """Pick, assign and (regular items only) count. A gold item goes to every annotator, so its row is neither
    locked nor counted: a lock would hide it from the others (SKIP LOCKED) or queue them all on it."""
    if gold:
        pick, bump = f"pick AS MATERIALIZED ({_PICK[True]})", ""
    else:
        pick = f"pick AS MATERIALIZED ({_PICK[False]} FOR NO KEY UPDATE OF it SKIP LOCKED)"
        bump = ",\nbump AS (UPDATE tb_items SET n_assigned = n_assigned + 1 WHERE id IN (SELECT item_id FROM new))"
    return f"""{pick},
new AS (
  INSERT INTO tb_assignments ({_ASSIGN_COLS})
  SELECT :p, pick.id, :u, :layout::json, pick.is_gold, false, :now FROM pick RETURNING id, item_id){bump}
SELECT new.id, pick.ext_id, pick.payload FROM new JOIN pick ON pick.id = new.item_id"""


#: store the label and make the next assignment in one statement: {gold first: sql}
PG_STORE_AND_ASSIGN = {g: _pg(f"WITH {_PG_STORE},\n{_pg_assign(g)}") for g in (True, False)}
#: store only (another open assignment of theirs comes next)
PG_STORE = _pg(f"WITH {_PG_STORE}\nSELECT count(*) FROM lab")
#: make an assignment only (the fallback when the first choice of item kind had none left)
PG_ASSIGN = {g: _pg(f"WITH {_pg_assign(g)}") for g in (True, False)}

# --- SQLite -------------------------------------------------------------------------------------------

LITE_ROW = _ROW
LITE_LABEL = (f"INSERT INTO tb_labels ({_LABEL_COLS}) "
              "VALUES (:a, :p, :i, :u, :value, :flagged, :note, :dur, :server_ms, :now)")
LITE_CLOSE = "UPDATE tb_assignments SET done = 1 WHERE id = :a"
LITE_PICK = _PICK
LITE_ASSIGN = (f"INSERT INTO tb_assignments ({_ASSIGN_COLS}) "
               "VALUES (:p, :i, :u, :layout, :is_gold, 0, :now) RETURNING id")
LITE_BUMP = "UPDATE tb_items SET n_assigned = n_assigned + 1 WHERE id = :i"


@dataclass(frozen=True)
class Page:
    """What `service.task_view` needs of the project (the attribute names of the ORM row it also takes)."""

    project_id: int
    name: str
    task_type: str
    instructions: str


@dataclass(frozen=True)
class Result:
    """`view`: the next task page; None when the caller shows the annotator's current page by the reference
    path (`service.next_assignment`): after a duplicate submit, before an older open assignment of theirs, or
    when nothing is left for them (then the label is stored and committed)."""

    project_id: int
    view: dict[str, Any] | None


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


class SubmitSQL:
    """Bound to one Database: the dialect's statements and SQLAlchemy's own SQLite date format (so rows written
    here read back through the ORM exactly like rows it wrote)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.pg = db.dialect == "postgresql"
        date_type = Label.__table__.c.submitted_at.type
        self._date = date_type.bind_processor(db.engine.dialect) if not self.pg else None
        self._dbapi = db.engine.dialect.loaded_dbapi

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A DB-API cursor in one transaction on a pooled connection (SQLite: the process's writer lock and
        BEGIN IMMEDIATE, as `Database.session`); committed on success, rolled back on any error."""
        lock = self.db._lock
        if lock is not None:
            lock.acquire()
        try:
            raw = self.db.engine.raw_connection()
            try:
                cur = self._cursor(raw)
                if not self.pg:
                    cur.execute("BEGIN IMMEDIATE")
                try:
                    yield cur
                    raw.commit()
                except BaseException as exc:
                    self._failed(raw, cur, exc)
                    if isinstance(exc, self._dbapi.IntegrityError):
                        raise Conflict(str(exc)) from exc
                    raise
            finally:
                raw.close()
        finally:
            if lock is not None:
                lock.release()

    @staticmethod
    def _cursor(raw: Any) -> Any:
        """One cursor per DB-API connection, kept with it (a new psycopg cursor copies the adapter map)."""
        conn = raw.driver_connection
        kept = raw.info.get("tb_submit_cursor")
        if kept is None or kept[0] is not conn:
            kept = (conn, conn.cursor())
            raw.info["tb_submit_cursor"] = kept
        return kept[1]

    def _failed(self, raw: Any, cur: Any, exc: BaseException) -> None:
        """Roll back; a connection the database dropped is thrown away, not given back to the pool."""
        dialect = self.db.engine.dialect
        if isinstance(exc, self._dbapi.Error) and dialect.is_disconnect(exc, raw.driver_connection, cur):
            raw.invalidate(exc)
            return
        raw.rollback()

    def _stamp(self, now: Any) -> Any:
        return self._date(now) if self._date is not None else now

    def submit_and_next(self, user_id: int, assignment_id: int, form: Mapping[str, str]) -> Result:
        """Store the label of the annotator's own open assignment and make their next one, in one transaction.
        Raises Gone (not theirs / no such id) and tasks.FormError (nothing stored); an IntegrityError means a
        concurrent twin won (nothing stored by this one)."""
        with self.transaction() as cur:
            cur.execute(PG_ROW if self.pg else LITE_ROW, {"a": assignment_id, "u": user_id})
            row = cur.fetchone()
            if row is None or row[0] != user_id:
                raise Gone(assignment_id)
            (_, project_id, item_id, layout, done, served_at, payload, _ext, task, name, instructions, n_per_item,
             gold_every, n_regular, n_gold, n_done, open_id) = row
            if done:
                return Result(project_id, None)
            layout, payload = _json(layout), _json(payload)
            kind = tasks.task_type(task)  # a dict lookup: no import and no query per request
            value = kind.parse_form(payload, layout, form)
            flagged, note, duration = label_fields(form)
            now = utcnow()
            if isinstance(served_at, str):  # SQLite: SQLAlchemy's text form, naive UTC
                served_at = datetime.fromisoformat(served_at)
            params: dict[str, Any] = {
                "a": assignment_id, "p": project_id, "i": item_id, "u": user_id, "value": json.dumps(value),
                "flagged": flagged, "note": note, "dur": duration, "server_ms": server_ms(served_at, now),
                "now": self._stamp(now), "n": n_per_item}
            if open_id is not None:  # resume an older open assignment: the reference path reads its page
                if self.pg:
                    cur.execute(PG_STORE, params)
                else:
                    cur.execute(LITE_LABEL, params)
                    cur.execute(LITE_CLOSE, params)
                return Result(project_id, None)
            new_layout = kind.new_layout()
            params["layout"] = json.dumps(new_layout)
            gold_first = gold_due(n_regular, n_gold, gold_every)
            got = self._store_and_assign(cur, params, gold_first)
            if got is None:
                return Result(project_id, None)
            new_id, ext_id, new_payload = got
            # the annotator's place on the new page (counts.py; a count only now and then)
            free = counts.remaining(self.db.engine).free(project_id, user_id, n_per_item, n_regular + n_gold + 1,
                                                         lambda sql, ps: self._scalar(cur, sql, ps))
        page = Page(project_id, name, task, instructions)
        return Result(project_id, task_view(new_id, False, page, ext_id, _json(new_payload), new_layout, n_done + 1,
                                            counts.place(n_done + 1, 1, free)))

    def _scalar(self, cur: Any, sql: str, params: dict[str, Any]) -> Any:
        """One value of a `:name`-style query run on this transaction's cursor."""
        cur.execute(_pg(sql) if self.pg else sql, params)
        return cur.fetchone()[0]

    def _store_and_assign(self, cur: Any, params: dict[str, Any], gold_first: bool) -> tuple[int, str, Any] | None:
        """Label stored, assignment closed, next one made (gold or regular first, then the other kind):
        (new assignment id, item ext id, item payload), or None when no item is left for this annotator."""
        if self.pg:
            cur.execute(PG_STORE_AND_ASSIGN[gold_first], params)
            got = cur.fetchone()
            if got is None:
                cur.execute(PG_ASSIGN[not gold_first], params)
                got = cur.fetchone()
            return (got[0], got[1], got[2]) if got is not None else None
        cur.execute(LITE_LABEL, params)
        cur.execute(LITE_CLOSE, params)
        for gold in (gold_first, not gold_first):
            cur.execute(LITE_PICK[gold], params)
            item = cur.fetchone()
            if item is not None:
                break
        else:
            return None
        item_id, is_gold, ext_id, payload = item
        cur.execute(LITE_ASSIGN, {**params, "i": item_id, "is_gold": bool(is_gold)})
        new_id = cur.fetchone()[0]
        if not is_gold:
            cur.execute(LITE_BUMP, {"i": item_id})
        return new_id, ext_id, payload
