"""The plain-SQL submission path (fast.py) on SQLite and PostgreSQL: concurrent twins of one submission store one
label, concurrent annotators get balanced assignments never twice to one person and never more than N, and
rows it writes read back through the ORM like rows the ORM writes."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from tailorbench.annotate import service
from tailorbench.annotate.db import Database
from tailorbench.annotate.fast import Conflict, FastPath, Gone
from tailorbench.annotate.models import Assignment, Item, Label


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
    fast = FastPath(db)
    barrier = threading.Barrier(6)
    outcomes: list[Any] = []

    def twin(choice: str) -> None:
        barrier.wait()
        try:
            outcomes.append(fast.submit_and_next(uid, aid, {"choice": choice, "note": "  hi "}))
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
    again = fast.submit_and_next(uid, aid, {"choice": "1"})
    assert again.view is None and again.project_id == pid
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Assignment)) == 2


def test_someone_elses_assignment_is_gone(db: Database, tmp_path: Path) -> None:
    pid = _project(db, tmp_path, 3, 2)
    alice, bob = _users(db, 2)
    aid = _first(db, alice, pid)
    fast = FastPath(db)
    for uid, target in ((bob, aid), (alice, aid + 1000)):
        try:
            fast.submit_and_next(uid, target, {"choice": "1"})
        except Gone:
            continue
        raise AssertionError("expected Gone")
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0


def _work(db: Database, fast: FastPath, uid: int, pid: int, limit: int, barrier: threading.Barrier,
          errors: list[str]) -> None:
    try:
        aid: int | None = _first(db, uid, pid)
        barrier.wait()
        for _ in range(limit):
            assert aid is not None
            got = fast.submit_and_next(uid, aid, {"choice": "2"})
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
    fast = FastPath(db)

    def run(limit: int) -> None:
        barrier = threading.Barrier(k)
        errors: list[str] = []
        threads = [threading.Thread(target=_work, args=(db, fast, u, pid, limit, barrier, errors)) for u in users]
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
    fast = FastPath(db)
    aid = _first(db, uid, pid)
    shown = []
    while True:
        got = fast.submit_and_next(uid, aid, {"choice": "1"})
        if got.view is None:
            break
        shown.append(got.view["item_id"])
        aid = got.view["assignment"]["id"]
    # the first (regular) came from next_assignment; then gold after every 2 regular ones, the rest regular
    assert shown == ["c1", "g0", "c2", "c3", "g1", "c4", "c5"]
