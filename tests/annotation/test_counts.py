"""The task page's "item X of N · M remaining" (annotate/counts.py): the arithmetic with and without a quota, the
count carried forward between counts, and, counted afresh every time, the same figure as `service.my_counts`
on both submission paths and both databases."""

from __future__ import annotations

from typing import Any

import pytest

from tailorbench.annotation import counts, service
from tailorbench.annotation.db import Database
from tailorbench.annotation.submit_sql import SubmitSQL
from tests.annotation.conftest import DATA


def test_place() -> None:
    assert counts.place(0, 1, 9) == counts.Place(1, 10, 9)
    assert counts.place(4, 1, 0) == counts.Place(5, 5, 0)
    assert counts.place(4, 1, 20, quota=6) == counts.Place(5, 6, 1)  # the quota caps what is left
    assert counts.place(4, 1, -3) == counts.Place(5, 5, 0)  # a count others' work overtook: never below the item


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_free_is_carried_forward_by_own_assignments(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(counts.time, "monotonic", clock)
    calls: list[str] = []

    def run(sql: str, params: dict[str, Any]) -> int:
        calls.append(sql)
        return 50 if sql == counts.OPEN_ITEMS_SQL else 10

    r = counts.Remaining()
    assert r.free(1, 7, 3, assigned=12, run=run) == 40 and len(calls) == 2
    clock.now += 1.5
    assert r.free(1, 7, 3, assigned=13, run=run) == 39 and len(calls) == 2  # one more of theirs: one fewer
    clock.now += counts.FREE_TTL_S
    assert r.free(1, 7, 3, assigned=14, run=run) == 40 and len(calls) == 4  # counted again


def test_place_matches_my_counts(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counts, "FREE_TTL_S", 0.0)
    monkeypatch.setattr(counts, "OPEN_ITEMS_TTL_S", 0.0)
    pid = service.create_project(db, "pw", "pairwise", 2, gold_every=2)
    service.import_items(db, "pw", DATA / "paircase.jsonl")
    sql = SubmitSQL(db)
    users = [service.add_user(db, name, "annotator", ["pw"])[0] for name in ("ann", "bob", "cy")]
    current: dict[int, int | None] = {}
    with db.session() as s:
        for uid in users:
            a = service.next_assignment(s, uid, pid)
            current[uid] = a.id if a else None
    for _ in range(6):
        for uid in users:
            aid = current[uid]
            if aid is None:
                continue
            with db.session() as s:
                view = service.assignment_view(s, uid, aid)
                mine = service.my_counts(s, uid, pid)
            place = view["place"]
            assert (place.item, place.total - place.item + 1) == (mine["done"] + 1, mine["available"])
            got = sql.submit_and_next(uid, aid, {"choice": "1"})
            if got.view is None:
                with db.session() as s:
                    a = service.next_assignment(s, uid, pid)
                current[uid] = a.id if a else None
                continue
            with db.session() as s:
                mine = service.my_counts(s, uid, pid)
            place = got.view["place"]
            assert (place.item, place.total - place.item + 1) == (mine["done"] + 1, mine["available"])
            current[uid] = got.view["assignment"]["id"]
