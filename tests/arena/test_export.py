"""`tailor arena export`: the illustrative arena's votes (simulated persona participants over HTTP, `tailor arena
demo`) as a native benchmark that `tailor data check` loads and `tailor eval --data` runs; ties, both-bad, gold
battles and excluded voters' votes left out and counted; pseudonyms unless --reveal-ids; the export recorded so a
deletion's receipt lists it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.arena.exported import run_demo


@pytest.fixture(scope="module")
def demo_arena(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small illustrative arena after its demo (six simulated participants, ten votes each)."""
    return run_demo(tmp_path_factory.mktemp("arena_export"))


def test_export_round_trip(demo_arena: Path, tmp_path: Path) -> None:
    from tailorbench.arena.store import ArenaStore, resolve_url

    runner = CliRunner()
    out = tmp_path / "arena.jsonl"
    got = runner.invoke(app, ["arena", "export", str(demo_arena), "--out", str(out), "--json"])
    assert got.exit_code == 0, got.output
    summary = json.loads(got.stdout)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert summary["exported"] == len(rows) > 0
    store = ArenaStore(resolve_url(None, demo_arena))
    try:
        voted = store.voted_battles()
        exports = store.exports_made()
    finally:
        store.dispose()
    # every counted vote is either exported or left out for one stated reason
    assert summary["exported"] + sum(summary["left_out"].values()) == len(voted)
    assert summary["left_out"].get("gold", 0) == sum(v.outcome.gold for v in voted)
    assert summary["left_out"].get("excluded_voter", 0) > 0  # the demo plants an always-left voter
    by_ref = {f"arena-{v.outcome.battle_id}": v for v in voted}
    pids = {v.pid for v in voted}
    for row in rows:
        v = by_ref[row["id"]]
        assert v.outcome.outcome in ("a", "b") and not v.outcome.gold
        assert row["chosen"].strip() != row["rejected"].strip()  # a vote between one answer twice prefers nothing
        assert row["chosen"] == (v.answer_a if v.outcome.outcome == "a" else v.answer_b)
        assert row["tier"] == {3: "easy", 2: "medium", 1: "hard"}[v.outcome.confidence]
        assert row["user_id"].startswith("v-") and row["user_id"] not in pids
        assert row["question"] == v.question and row["persona"]
    assert exports[-1]["kind"] == "benchmark" and exports[-1]["path"] == str(out)
    assert not exports[-1]["reveal_ids"]

    check = runner.invoke(app, ["data", "check", str(out)])
    assert check.exit_code == 0, check.output
    run = tmp_path / "run"
    ev = runner.invoke(app, ["eval", "--data", str(out), "--judge", "longer", "--out", str(run), "--n-boot", "50",
                             "--no-progress"])
    assert ev.exit_code == 0, ev.output
    predictions = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(p)["case_id"] for p in predictions if p.strip()} == {r["id"] for r in rows}


def test_export_reveal_ids_and_deletion_receipt(demo_arena: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "revealed.jsonl"
    got = runner.invoke(app, ["arena", "export", str(demo_arena), "--out", str(out), "--reveal-ids", "--json"])
    assert got.exit_code == 0, got.output
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["user_id"].startswith("p-")
    folder = runner.invoke(app, ["arena", "export", str(demo_arena), "--out", str(demo_arena)])
    assert folder.exit_code == 2  # --out is a file, not the arena's folder
    gone = runner.invoke(app, ["arena", "delete", str(demo_arena), "--participant", first["user_id"], "--json"])
    assert gone.exit_code == 0, gone.output
    redo = json.loads(gone.stdout)["exports_to_redo"]
    assert any(e["kind"] == "benchmark" and e["path"] == str(out) and e["reveal_ids"] for e in redo)
