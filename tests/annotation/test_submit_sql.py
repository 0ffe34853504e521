"""The web app's plain-SQL submission path (annotate/submit_sql.py) on SQLite and PostgreSQL: concurrent twins of
one submission store one label, concurrent annotators get balanced assignments never twice to one person and never
more than N, rows it writes read back through the ORM like rows the ORM writes, and the same events through it and
through `service` leave the same database (one set of assignment rules)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from tailorbench.annotation import service, tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item, Label, Project, User
from tailorbench.annotation.submit_sql import Conflict, Gone, SubmitSQL


def _project(db: Database, tmp_path: Path, n_items: int, n: int, gold_every: int = 1000) -> int:
    pid = service.create_project(db, "pw", "pairwise", n, "", gold_every)
    path = tmp_path / "items.jsonl"
    with path.open("w") as f:
        for i in range(n_items):
            f.write(json.dumps({"id": f"c{i}", "split": "general", "user_id": "u1", "persona": {"age": 30},
                                "question": f"Q{i}?", "answer_a": f"a{i}", "answer_b": f"b{i}"}) + "\n")
    service.import_items(db, "pw", path)
    return pid


def _users(db: Database, k: int) -> list[int]:
    return [service.add_user(db, f"u{i}", "annotator", ["pw"])[0] for i in range(k)]


def _first(db: Database, uid: int, pid: int) -> int:
    with db.session() as s:
        a = service.next_assignment(s, uid, pid)
        assert a is not None
        return a.id


def test_concurrent_twins_store_one_label(db: Database, tmp_path: Path) -> None:
    pid = _project(db, tmp_path, 6, 2)
    (uid,) = _users(db, 1)
    aid = _first(db, uid, pid)
    sql = SubmitSQL(db)
    barrier = threading.Barrier(6)
    outcomes: list[Any] = []

    def twin(choice: str) -> None:
        barrier.wait()
        try:
            outcomes.append(sql.submit_and_next(uid, aid, {"choice": choice, "note": "  hi "}))
        except Conflict as exc:  # pragma: no cover - the row lock normally serialises them
            outcomes.append(exc)

    threads = [threading.Thread(target=twin, args=("12"[i % 2],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 6
    pages = [o for o in outcomes if not isinstance(o, Conflict) and o.view is not None]
    assert len(pages) == 1  # one stored the label and made the next assignment; the others stored nothing
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label).where(Label.assignment_id == aid)) == 1
        mine = s.execute(select(Assignment.id, Assignment.done).where(Assignment.user_id == uid)
                         .order_by(Assignment.id)).all()
        assert mine == [(aid, True), (pages[0].view["assignment"]["id"], False)]
        assert s.scalar(select(func.sum(Item.n_assigned))) == 2
    # written in plain SQL, read back by the ORM: value, note, timestamps, layout
    (row,) = service.raw_labels(db, "pw")
    assert row["value"]["choice"] in ("A", "B") and row["note"] == "hi" and row["shown_order"] in ("AB", "BA")
    assert service.progress(db, "pw")["annotators"][0]["last_submission"] is not None
    # a later submit of the same assignment is a duplicate: nothing stored, no new assignment
    again = sql.submit_and_next(uid, aid, {"choice": "1"})
    assert again.view is None and again.project_id == pid
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Assignment)) == 2


def test_someone_elses_assignment_is_gone(db: Database, tmp_path: Path) -> None:
    pid = _project(db, tmp_path, 3, 2)
    alice, bob = _users(db, 2)
    aid = _first(db, alice, pid)
    sql = SubmitSQL(db)
    for uid, target in ((bob, aid), (alice, aid + 1000)):
        try:
            sql.submit_and_next(uid, target, {"choice": "1"})
        except Gone:
            continue
        raise AssertionError("expected Gone")
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0


def _work(db: Database, sql: SubmitSQL, uid: int, pid: int, limit: int, barrier: threading.Barrier,
          errors: list[str]) -> None:
    try:
        aid: int | None = _first(db, uid, pid)
        barrier.wait()
        for _ in range(limit):
            assert aid is not None
            got = sql.submit_and_next(uid, aid, {"choice": "2"})
            if got.view is None:  # nothing left (or a resume): the reference path says what comes next
                with db.session() as s:
                    a = service.next_assignment(s, uid, pid)
                if a is None:
                    return
                aid = a.id
            else:
                aid = got.view["assignment"]["id"]
    except Exception as exc:  # pragma: no cover - reported below
        errors.append(repr(exc))


def test_concurrent_annotators_balanced_never_twice(db: Database, tmp_path: Path) -> None:
    n_items, n, k = 30, 3, 8
    pid = _project(db, tmp_path, n_items, n)
    users = _users(db, k)
    sql = SubmitSQL(db)

    def run(limit: int) -> None:
        barrier = threading.Barrier(k)
        errors: list[str] = []
        threads = [threading.Thread(target=_work, args=(db, sql, u, pid, limit, barrier, errors)) for u in users]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors

    def check() -> Counter[int]:
        with db.session() as s:
            pairs = s.execute(select(Assignment.item_id, Assignment.user_id)).all()
            counted = dict(s.execute(select(Item.id, Item.n_assigned)).all())
        assert len(set(pairs)) == len(pairs)  # never the same item twice to one person
        per_item = Counter(i for i, _ in pairs)
        assert all(counted[i] == per_item.get(i, 0) for i in counted)  # n_assigned kept in step
        assert max(counted.values()) <= n
        return Counter(counted)

    run(5)  # half-way: items fill breadth-first
    levels = check()
    assert max(levels.values()) - min(levels.values()) <= 2
    run(100)  # to the end: every item has exactly N labels
    assert set(check().values()) == {n}
    with db.session() as s:
        per_item = Counter(s.scalars(select(Label.item_id)))
    assert len(per_item) == n_items and set(per_item.values()) == {n}


def test_gold_items_come_when_due(db: Database, tmp_path: Path) -> None:
    pid = _project(db, tmp_path, 6, 1, gold_every=2)
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"id": f"g{i}", "split": "general", "user_id": "u1", "persona": {"age": 1},
                                        "question": "Q?", "answer_a": "a", "answer_b": "b", "gold": "A"}) + "\n"
                            for i in range(2)))
    service.import_items(db, "pw", gold)
    (uid,) = _users(db, 1)
    sql = SubmitSQL(db)
    aid = _first(db, uid, pid)
    shown = []
    while True:
        got = sql.submit_and_next(uid, aid, {"choice": "1"})
        if got.view is None:
            break
        shown.append(got.view["item_id"])
        aid = got.view["assignment"]["id"]
    # the first (regular) came from next_assignment; then gold after every 2 regular ones, the rest regular
    assert shown == ["c1", "g0", "c2", "c3", "g1", "c4", "c5"]


# --- one set of rules: the plain-SQL path and the service path through the same events -------------------------


class _Path:
    """An annotation project driven one event at a time, the way the web app drives it: every annotator has the
    task page on screen of their current assignment (None when nothing is left) and submits its form."""

    def __init__(self, db: Database, name: str, users: dict[str, int]) -> None:
        self.db, self.name, self.users = db, name, users
        with db.session() as s:
            self.pid = _project_id(s, name)
        self.current: dict[str, int | None] = {u: self._page(uid) for u, uid in users.items()}
        self.finished: dict[str, list[int]] = {u: [] for u in users}

    def _page(self, uid: int) -> int | None:
        """The annotator's current page as GET /p/ shows it (resume, or a new assignment)."""
        with self.db.session() as s:
            a = service.next_assignment(s, uid, self.pid)
            return None if a is None else a.id

    def form(self, user: str, aid: int, choice: str, extra: dict[str, str]) -> dict[str, str]:
        """The annotator picks the canonical answer `choice` (A or B) on the page, whatever order it shows."""
        with self.db.session() as s:
            swap = bool(s.get(Assignment, aid).layout.get("swap"))  # type: ignore[union-attr]
        shown = {"A": "1", "B": "2"}[choice] if not swap else {"A": "2", "B": "1"}[choice]
        return {"choice": shown, **extra}

    def submit(self, uid: int, aid: int, form: dict[str, str]) -> tuple[int | None, int | None]:
        raise NotImplementedError

    def event(self, user: str, kind: str, choice: str, extra: dict[str, str]) -> Any:
        """One event; returns what the annotator sees afterwards: (item id of the page, labels done) or the
        error, the same on both paths when their rules are the same."""
        uid = self.users[user]
        if kind == "again":  # a repeated POST of a finished assignment (double click, retry, reload)
            if not self.finished[user]:
                return "nothing to repeat"
            aid: int | None = self.finished[user][-1]
        else:
            aid = self.current[user]
        if aid is None:
            return "done"
        form = self.form(user, aid, choice, extra) if kind != "bad" else {"choice": "3"}
        try:
            shown = self.submit(uid, aid, form)
        except tasks.FormError as exc:
            return f"form error: {exc}"
        if kind != "again":
            self.finished[user].append(aid)
        self.current[user] = shown[0]
        if shown[0] is None:
            return "done"
        with self.db.session() as s:
            view = service.assignment_view(s, uid, shown[0])
        return view["item_id"], view["done_count"], shown[1]


def _project_id(s: Any, name: str) -> int:
    pid = s.scalar(select(Project.id).where(Project.name == name))
    assert pid is not None
    return int(pid)


class _ServicePath(_Path):
    """The reference: `service.submit` and `service.next_assignment` in one transaction (the Python API)."""

    def submit(self, uid: int, aid: int, form: dict[str, str]) -> tuple[int | None, int | None]:
        with self.db.session() as s:
            service.submit(s, uid, aid, form)
            a = service.next_assignment(s, uid, self.pid, lazy_commit=False)
            if a is None:
                return None, None
            done = a.done_count if a.done_count is not None else service.assignment_view(s, uid, a.id)["done_count"]
            return a.id, done


class _SqlPath(_Path):
    """The web app's path: `SubmitSQL.submit_and_next`, and the service's page when it hands back no view."""

    def submit(self, uid: int, aid: int, form: dict[str, str]) -> tuple[int | None, int | None]:
        got = SubmitSQL(self.db).submit_and_next(uid, aid, form)
        if got.view is None:
            current = self._page(uid)
            if current is None:
                return None, None
            with self.db.session() as s:
                return current, service.assignment_view(s, uid, current)["done_count"]
        return got.view["assignment"]["id"], got.view["done_count"]


def _state(db: Database, name: str) -> dict[str, Any]:
    """The project's rows as a reader of the database sees them, without ids, timestamps and random layouts:
    each annotator's assignments and labels in the order they were made, and every item's assignment count."""
    with db.session() as s:
        pid = _project_id(s, name)
        assignments = s.execute(
            select(User.name, Item.ext_id, Assignment.is_gold, Assignment.done)
            .join(User, User.id == Assignment.user_id).join(Item, Item.id == Assignment.item_id)
            .where(Assignment.project_id == pid).order_by(Assignment.id)).all()
        labels = s.execute(
            select(User.name, Item.ext_id, Label.value, Label.flagged, Label.note, Label.duration_ms)
            .join(User, User.id == Label.user_id).join(Item, Item.id == Label.item_id)
            .where(Label.project_id == pid).order_by(Label.id)).all()
        items = s.execute(select(Item.ext_id, Item.n_assigned).where(Item.project_id == pid).order_by(Item.seq)).all()
    per_user: dict[str, dict[str, list[Any]]] = {}
    for user, *row in assignments:
        per_user.setdefault(user, {"assignments": [], "labels": []})["assignments"].append(tuple(row))
    for user, *row in labels:
        per_user.setdefault(user, {"assignments": [], "labels": []})["labels"].append(tuple(row))
    progress = service.progress(db, name)
    progress.pop("project")
    for row in progress["annotators"]:
        row.pop("last_submission")
    return {"per_user": per_user, "items": [tuple(r) for r in items], "progress": progress,
            "ratings": [(r.item, r.rater, r.label) for r in service.ratings(db, name, include_gold=True).ratings]}


def test_sql_path_and_service_path_store_the_same(db: Database, tmp_path: Path) -> None:
    """The same sequence of events (labels with notes, flags and timings, repeated POSTs, invalid forms, gold
    when due, items filling to N, annotators running out of work) through the plain-SQL path and through
    `service` leaves the same rows in the database and shows every annotator the same pages."""
    import random

    rows = [{"id": f"c{i}", "split": "general", "user_id": "u1", "persona": {"age": 30}, "question": f"Q{i}?",
             "answer_a": f"a{i}", "answer_b": f"b{i}"} for i in range(9)]
    gold = [{**rows[0], "id": f"g{i}", "gold": "AB"[i % 2]} for i in range(3)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gold))
    names = ["ann", "bob", "cid", "dee"]
    for project in ("ref", "sql"):
        service.create_project(db, project, "pairwise", 2, "", 2)
        service.import_items(db, project, tmp_path / "items.jsonl")
        service.import_items(db, project, tmp_path / "gold.jsonl")
    users = {n: service.add_user(db, n, "annotator", ["ref", "sql"])[0] for n in names}
    ref, sql = _ServicePath(db, "ref", users), _SqlPath(db, "sql", users)
    rng = random.Random(21)
    seen: list[tuple[Any, Any]] = []
    for step in range(120):
        user = rng.choice(names[:3] if step < 40 else names)  # dee starts late, when items are filling up
        kind = rng.choices(["label", "again", "bad"], weights=[8, 1, 1])[0]
        extra = {"elapsed_ms": str(rng.choice([900, 1500, 30000])) if rng.random() < 0.8 else "soon"}
        if rng.random() < 0.2:
            extra |= {"flag": "on", "note": rng.choice(["  unclear ", "typo"])}
        if rng.random() < 0.3:
            extra["confidence"] = rng.choice("123")
        choice = rng.choice("AB")
        seen.append((ref.event(user, kind, choice, extra), sql.event(user, kind, choice, extra)))
    for i, (by_service, by_sql) in enumerate(seen):
        assert by_sql == by_service, f"event {i}: the SQL path shows {by_sql}, the service {by_service}"
    assert all(ref.current[u] is None for u in names)  # the run went to the end: nobody has work left
    assert any(r == "done" for r, _ in seen) and any(str(r).startswith("form error") for r, _ in seen)
    assert _state(db, "sql") == _state(db, "ref")
    assert {g for _, g, *_ in _state(db, "ref")["per_user"]["ann"]["assignments"]} == {True, False}
