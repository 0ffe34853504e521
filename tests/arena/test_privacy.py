"""Privacy: after a deletion request nothing of the participant is left in any table of the arena database, in the
call cache or in the arena's logs, the other participant's data is untouched, and the receipt lists the exports
made before the request; exports name participants by pseudonym unless asked otherwise."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, String, Text, select
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.arena.conftest import Participant

PROFILE = {"age": "35-44", "occupation": "lighthouse keeper on Skye", "interests": "kelp foraging and tide tables"}
QUESTION = "What should a lighthouse keeper pack for a winter on Skye?"


def _every_text(store: Any) -> str:
    """Every text and string value of every table of the database, joined."""
    meta = MetaData()
    meta.reflect(store.engine)
    out = []
    with store.engine.connect() as conn:
        for table in meta.sorted_tables:
            cols = [c for c in table.columns if isinstance(c.type, (String, Text))]
            if cols:
                out += [str(v) for row in conn.execute(select(*cols)) for v in row if v is not None]
    return "\n".join(out)


def _battle(p: Participant, question: str) -> str:
    ref = p.ask(question)
    p.stream(ref, "1"), p.stream(ref, "2")
    assert p.vote(ref).status_code == 303
    return ref


def test_deletion_leaves_no_trace(make_arena: Callable[..., Path], open_arena: Callable[..., Any],
                                  arena_db: str, tmp_path: Path) -> None:
    folder = make_arena(gold={"rate": 0.0})
    _config, store, client = open_arena(folder)
    with client() as c, client() as c2:
        gone, kept = Participant(c), Participant(c2)
        gone.enter(PROFILE)
        kept.enter({"age": "18-24", "interests": "chess"})
        refs = [_battle(gone, QUESTION), _battle(gone, QUESTION + " (again)")]
        _battle(kept, "How do I open with the London system?")
    pid = store.voted_battles()[0].pid
    keys = [k for ref in refs for k in (store.battle(ref)["key_a"], store.battle(ref)["key_b"])]
    cache = tmp_path / "calls.sqlite"
    with sqlite3.connect(cache) as db:
        assert db.execute(f"select count(*) from calls where key in ({','.join('?' * len(keys))})",
                          keys).fetchone()[0] == len(keys)
    events = folder / "logs" / "events.jsonl"
    assert pid in events.read_text(encoding="utf-8")
    runner = CliRunner()
    board = runner.invoke(app, ["arena", "leaderboard", str(folder), "--db", arena_db, "--json"])
    assert board.exit_code == 0, board.output
    assert pid not in (folder / "leaderboard" / "leaderboard.json").read_text(encoding="utf-8")  # pseudonyms
    got = runner.invoke(app, ["arena", "delete", str(folder), "--participant", pid, "--db", arena_db, "--json"])
    assert got.exit_code == 0, got.output
    receipt = json.loads(got.output)
    assert receipt["battles"] == 2 and receipt["votes"] == 2 and receipt["cache_entries"] == len(keys)
    assert [e["kind"] for e in receipt["exports_to_redo"]] == ["leaderboard"]
    assert pid not in Path(receipt["receipt"]).read_text(encoding="utf-8")
    # nowhere in the database, the call cache or the logs
    everything = _every_text(store)
    for trace in (pid, *refs, QUESTION, "lighthouse keeper", "kelp foraging"):
        assert trace not in everything, trace
    with sqlite3.connect(cache) as db:
        assert db.execute(f"select count(*) from calls where key in ({','.join('?' * len(keys))})",
                          keys).fetchone()[0] == 0
        responses = "\n".join(r[0] for r in db.execute("select response from calls"))
    assert "lighthouse" not in responses and "kelp" not in responses
    for log in (folder / "logs").iterdir():
        text = log.read_text(encoding="utf-8")
        assert all(t not in text for t in (pid, *refs)), log
    # the other participant is untouched
    assert len(store.voted_battles()) == 1 and "London system" in everything
    again = runner.invoke(app, ["arena", "delete", str(folder), "--participant", pid, "--db", arena_db])
    assert again.exit_code == 2 and "no such participant" in again.output


def test_reveal_ids_is_recorded(make_arena: Callable[..., Path], open_arena: Callable[..., Any],
                                arena_db: str) -> None:
    folder = make_arena(gold={"rate": 0.0})
    _config, store, client = open_arena(folder)
    with client() as c:
        p = Participant(c)
        p.enter()
        _battle(p, "Which board game suits two players?")
    pid = store.voted_battles()[0].pid
    out = folder / "revealed"
    got = CliRunner().invoke(app, ["arena", "leaderboard", str(folder), "--reveal-ids", "--out", str(out),
                                   "--db", arena_db])
    assert got.exit_code == 0, got.output
    assert pid in (out / "leaderboard.json").read_text(encoding="utf-8")
    assert store.exports_made()[-1]["reveal_ids"] is True
