"""The arena's store on SQLite and PostgreSQL: concurrent writers (threads, and separate processes) voting on the
same battles at once lose and duplicate no vote; counters add up under concurrency; a battle a dead server left
mid-answer is regenerated or dropped on restart, and counted; the schema is the arena's own revision chain."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import inspect

from tailorbench.arena.store import ArenaStore


def _battles(store: ArenaStore, people: int, each: int) -> list[tuple[int, str]]:
    """`people` participants with `each` complete battles (gold battles: complete at once, no model)."""
    out = []
    for _ in range(people):
        pid, token = store.new_participant()
        me = store.identify(token)
        assert me is not None and me["pid"] == pid
        for _ in range(each):
            out.append((me["id"], store.create_battle(me["id"], "q", "gold", "gold-a", "gold-b", True,
                                                      ("a", "A", "B"))))
    return out


def _vote_all(url: str, battles: list[tuple[int, str]], outcome: str) -> list[str]:
    store = ArenaStore(url, run_migrations=False)
    try:
        return [store.vote(ref, pid, outcome, 2, None) for pid, ref in battles]
    finally:
        store.dispose()


def test_threads_voting_at_once_store_each_vote_once(arena_db: str) -> None:
    store = ArenaStore(arena_db)
    try:
        battles = _battles(store, 4, 10)
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda k: [store.vote(ref, pid, "ab"[k % 2], 2, None) for pid, ref in battles],
                                    range(8)))
        recorded = sum(r.count("recorded") for r in results)
        assert recorded == len(battles)
        assert sum(r.count("already") for r in results) == 7 * len(battles)
        voted = store.voted_battles()
        assert sorted(v.outcome.battle_id for v in voted) == sorted(ref for _, ref in battles)
    finally:
        store.dispose()


def test_processes_voting_at_once_store_each_vote_once(arena_db: str) -> None:
    store = ArenaStore(arena_db)
    try:
        battles = _battles(store, 3, 8)
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(4) as pool:
            results = pool.starmap(_vote_all, [(arena_db, battles, "ab"[k % 2]) for k in range(4)])
        assert sum(r.count("recorded") for r in results) == len(battles)
        assert all(set(r) <= {"recorded", "already"} for r in results)
        assert len(store.voted_battles()) == len(battles) == store.status_counts()["votes"]
    finally:
        store.dispose()


def test_counters_add_up_under_concurrent_writers(arena_db: str) -> None:
    store = ArenaStore(arena_db)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda _: _add(store), range(40)))
        assert store.counter("spend_usd") == pytest.approx(40 * 0.25)
    finally:
        store.dispose()


def _add(store: ArenaStore) -> None:
    with store.tx() as conn:
        store.add(conn, "spend_usd", 0.25)


@pytest.mark.parametrize("on_restart", ["regenerate", "drop"])
def test_a_battle_in_flight_at_a_crash_is_regenerated_or_dropped(arena_db: str, on_restart: str) -> None:
    store = ArenaStore(arena_db)
    try:
        _pid, token = store.new_participant()
        me = store.identify(token)
        assert me is not None
        ref = store.create_battle(me["id"], "q", "own", "x", "y", False)
        store.finish_side(ref, "a", "half an answer", None, None, 0.0)  # the server died before side b ended
        again = store.recover(on_restart)
        battle = store.battle(ref)
        assert battle is not None
        counts = store.status_counts()
        if on_restart == "regenerate":
            assert again == [ref] and battle["regenerated"] == 1 and battle["answer_a"] is None
            assert counts["regenerated_total"] == 1 and battle["status"] == "streaming"
        else:
            assert again == [] and battle["status"] == "dropped" and counts["dropped_total"] == 1
            assert store.vote(ref, me["id"], "a", 2, None) == "failed"
        assert store.recover(on_restart) == ([ref] if on_restart == "regenerate" else [])
    finally:
        store.dispose()


def test_the_schema_is_the_arenas_own_chain(arena_db: str) -> None:
    store = ArenaStore(arena_db)
    try:
        tables = set(inspect(store.engine).get_table_names())
        assert "arena_alembic_version" in tables and "alembic_version" not in tables
        assert {"arena_participants", "arena_battles", "arena_votes", "arena_flags"} <= tables
    finally:
        store.dispose()
    ArenaStore(arena_db).dispose()  # opening again migrates nothing and fails nothing


def test_a_file_that_is_not_a_database_is_an_error_naming_it(tmp_path: Path) -> None:
    from tailorbench.errors import ConfigError

    bad = tmp_path / "arena.sqlite"
    bad.write_text("not a database", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"arena database .*arena.sqlite: not a SQLite database"):
        ArenaStore(f"sqlite:///{bad}")


def test_both_sides_ending_at_once_complete_the_battle(arena_db: str) -> None:
    """The two answers of a battle end in two threads at once: every battle ends complete (the second writer sees
    the first's end), its cost is both sides', and a vote is then accepted."""
    store = ArenaStore(arena_db)
    try:
        _pid, token = store.new_participant()
        me = store.identify(token)
        assert me is not None
        refs = [store.create_battle(me["id"], "q", "own", "x", "y", True) for _ in range(20)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda job: store.finish_side(job[0], job[1], "text", None, None, 0.5),
                          [(ref, side) for ref in refs for side in "ab"]))
        assert store.status_counts()["battles"]["complete"] == 20
        assert all(store.battle(ref)["cost_usd"] == 1.0 for ref in refs)
        assert store.counter("spend_usd") == 20.0
        assert all(store.vote(ref, me["id"], "a", 1, None) == "recorded" for ref in refs)
    finally:
        store.dispose()
