"""Gold items and the last free slots under concurrent annotators, on SQLite and PostgreSQL (issue 22).

Every gold item goes to every annotator, so another annotator's transaction on a gold row must never hide it:
on PostgreSQL the pick once skipped locked gold rows (`SKIP LOCKED`) and told annotators they were done with
gold items unseen. Here annotators work to the end concurrently, half through the web app's submission path
(`SubmitSQL.submit_and_next`, then the reference page when it hands back none) and half through `service`
(the Python API), while on PostgreSQL another connection holds every gold row locked the whole time, as a
concurrent annotator's transaction in the middle of its pick did. A regular item still open to an annotator
must not look absent either while another annotator's transaction holds it. (SQLite has no row locks: its
transactions are exclusive, so there the same runs check the rules without a lock held.)
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import select, text

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item, Label, User
from tailorbench.annotation.submit_sql import SubmitSQL

N_PER_ITEM, GOLD_EVERY = 2, 2


def _project(db: Database, tmp_path: Path, n_regular: int, n_gold: int) -> int:
    pid = service.create_project(db, "pw", "pairwise", N_PER_ITEM, "", GOLD_EVERY)
    row = {"split": "general", "user_id": "u1", "persona": {"age": 30}, "question": "Q?", "answer_a": "a",
           "answer_b": "b"}
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({**row, "id": f"c{i}"}) + "\n" for i in range(n_regular))
                    + "".join(json.dumps({**row, "id": f"g{i}", "gold": "A"}) + "\n" for i in range(n_gold)))
    service.import_items(db, "pw", path)
    return pid


class Holder:
    """Another transaction holding item rows locked (`FOR NO KEY UPDATE`, the lock an annotator's pick and its
    `n_assigned` update take) on its own connection and thread. It lets go as soon as any session waits on it
    (`pg_blocking_pids`), so a path that waits is seen (`waited`) instead of hanging the test."""

    def __init__(self, db: Database, where: str) -> None:
        self.db, self.where = db, where
        self.locked: list[int] = []
        self.waited = False
        self._ready, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._hold)

    def _hold(self) -> None:
        with self.db.engine.connect() as conn:
            self.locked = list(conn.scalars(text(f"SELECT id FROM tb_items WHERE {self.where} "
                                                 "ORDER BY id FOR NO KEY UPDATE")))
            me = conn.scalar(text("SELECT pg_backend_pid()"))
            self._ready.set()
            blocked = text("SELECT count(*) FROM pg_stat_activity WHERE :me = ANY(pg_blocking_pids(pid))")
            while not self._stop.wait(0.02):
                if conn.scalar(blocked, {"me": me}):
                    self.waited = True
                    break
            conn.rollback()

    def __enter__(self) -> Holder:
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def held(db: Database, where: str) -> Iterator[Holder | None]:
    """Rows locked by another transaction on PostgreSQL; nothing on SQLite (no row locks there)."""
    if db.dialect != "postgresql":
        yield None
        return
    with Holder(db, where) as holder:
        yield holder


def _page(db: Database, uid: int, pid: int) -> int | None:
    """The annotator's current page as GET /p/ shows it: resume, a new assignment, or None (the done page)."""
    with db.session() as s:
        a = service.next_assignment(s, uid, pid)
        return None if a is None else a.id


def _annotate(db: Database, uid: int, pid: int, web: bool, start: threading.Barrier, errors: list[str]) -> None:
    """One annotator labelling until told done: by the web app's path (`web`) or the Python API's."""
    try:
        start.wait()
        aid = _page(db, uid, pid)
        sql = SubmitSQL(db)
        while aid is not None:
            if web:
                got = sql.submit_and_next(uid, aid, {"choice": "1"})
                aid = got.view["assignment"]["id"] if got.view is not None else _page(db, uid, pid)
            else:
                with db.session() as s:
                    service.submit(s, uid, aid, {"choice": "1"})
                    a = service.next_assignment(s, uid, pid, lazy_commit=False)
                    aid = None if a is None else a.id
    except Exception as exc:  # pragma: no cover - reported by the test
        errors.append(f"annotator {uid}: {exc!r}")


def _run(db: Database, pid: int, users: list[int]) -> None:
    start = threading.Barrier(len(users))
    errors: list[str] = []
    threads = [threading.Thread(target=_annotate, args=(db, u, pid, i % 2 == 0, start, errors))
               for i, u in enumerate(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_every_annotator_gets_every_gold_item_when_due(db: Database, tmp_path: Path) -> None:
    n_regular, n_gold, k = 24, 6, 10
    pid = _project(db, tmp_path, n_regular, n_gold)
    users = [service.add_user(db, f"ann{i}", "annotator", ["pw"])[0] for i in range(k)]
    with held(db, "is_gold") as holder:
        assert holder is None or len(holder.locked) == n_gold
        _run(db, pid, users)
    assert holder is None or not holder.waited, "an annotator waited on another transaction's gold rows"
    with db.session() as s:
        rows = s.execute(select(User.name, Item.ext_id, Assignment.is_gold, Assignment.done)
                         .join(User, User.id == Assignment.user_id).join(Item, Item.id == Assignment.item_id)
                         .order_by(Assignment.id)).all()
        labels = s.execute(select(Label.item_id, Label.user_id)).all()
    assert all(done for *_, done in rows)  # everyone worked to the end: told done with nothing open
    assert len(labels) == len(set(labels)) == len(rows)  # one label per assignment, never an item twice
    seen: dict[str, list[tuple[str, bool]]] = {}
    for name, ext_id, is_gold, _ in rows:
        seen.setdefault(name, []).append((ext_id, is_gold))
    assert len(seen) == k
    gold_items = {f"g{i}" for i in range(n_gold)}
    for name, order in seen.items():
        assert len({e for e, _ in order}) == len(order), f"{name} got an item twice"
        assert {e for e, g in order if g} == gold_items, f"{name} was told done with gold items unseen"
        n_reg = n_gl = 0
        for ext_id, is_gold in order:  # a due gold item is never skipped
            due = service.gold_due(n_reg, n_gl, GOLD_EVERY) and n_gl < n_gold
            assert is_gold or not due, f"{name} got {ext_id} with a gold item due ({n_reg} regular, {n_gl} gold)"
            n_gl += is_gold
            n_reg += not is_gold
    per_item = Counter(e for order in seen.values() for e, g in order if not g)
    assert per_item == {f"c{i}": N_PER_ITEM for i in range(n_regular)}  # exactly N annotators per regular item
    with db.session() as s:
        counted = dict(s.execute(select(Item.ext_id, Item.n_assigned).where(Item.is_gold.is_(False))).all())
    assert counted == per_item  # n_assigned, the count against N, in step with the assignments


def test_a_regular_item_held_by_another_transaction_is_still_offered(db: Database, tmp_path: Path) -> None:
    """The last regular item with a free slot, locked by another annotator's transaction in the middle of its
    pick, is not "nothing left": the annotator is not sent to the done page while a slot is open to them."""
    pid = _project(db, tmp_path, 1, 0)
    alice, bob = (service.add_user(db, n, "annotator", ["pw"])[0] for n in ("alice", "bob"))
    with held(db, "NOT is_gold") as holder:
        got = _page(db, bob, pid)
    assert got is not None, "told done while an item had a free slot for them"
    with db.session() as s:
        assert s.scalar(select(Item.ext_id).join(Assignment, Assignment.item_id == Item.id)
                        .where(Assignment.id == got)) == "c0"
    assert holder is None or holder.waited  # it waited for the other transaction instead of skipping the item
    assert _page(db, alice, pid) is not None and _page(db, service.add_user(db, "cid", "annotator", ["pw"])[0],
                                                       pid) is None  # N = 2: full now


def test_released_work_leaves_gold_uncounted(db: Database, tmp_path: Path) -> None:
    """Open assignments taken back (a deactivated account, a stale assignment) give regular items their slot
    back and leave gold items' count alone: gold items are never counted."""
    pid = _project(db, tmp_path, 1, 1)
    alice, bob = (service.add_user(db, n, "annotator", ["pw"])[0] for n in ("alice", "bob"))
    sql = SubmitSQL(db)

    def counted() -> dict[str, int]:
        with db.session() as s:
            return dict(s.execute(select(Item.ext_id, Item.n_assigned)).all())

    first = _page(db, alice, pid)
    assert first is not None
    got = sql.submit_and_next(alice, first, {"choice": "1"})
    assert got.view is not None and got.view["item_id"] == "g0"  # regular work done: the gold item next
    assert counted() == {"c0": 1, "g0": 0}
    assert service.set_active(db, "alice", False).released == 1
    assert _page(db, bob, pid) is not None and counted() == {"c0": 2, "g0": 0}
    assert service.release_stale(db, "pw", 0) == 1
    assert counted() == {"c0": 1, "g0": 0}
