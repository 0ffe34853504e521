"""`tailor arena demo` end to end through the CLI, on SQLite and on PostgreSQL: the server on a free loopback
port, simulated persona participants through the pages over HTTP, the leaderboard (read back strictly), every
output labelled illustrative, the planted always-left and contrary voters found by voter quality, and the status
and plan verbs on the result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.arena.leaderboard import read
from tailorbench.cli.app import app


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_demo_end_to_end(tmp_path: Path, backend: str, request: pytest.FixtureRequest,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    d = tmp_path / "demo"
    args = ["arena", "demo", str(d), "--participants", "8", "--json"]
    if backend == "postgres":
        db = request.getfixturevalue("arena_db_pg")
        args += ["--db", db]
    runner = CliRunner()
    got = runner.invoke(app, args)
    assert got.exit_code == 0, got.output
    result = json.loads(got.stdout)
    assert result["illustrative"] is True and len(result["participants"]) == 8
    assert all(p["status"] == "finished" and p["votes"] == 10 for p in result["participants"])
    assert result["status"]["votes"] == 80 and result["status"]["battles"]["complete"] == 80
    board = read(d / "leaderboard" / "leaderboard.json")
    assert board.illustrative and board.headline.startswith("ILLUSTRATIVE")
    for name in ("leaderboard.md", "leaderboard.html"):
        assert "ILLUSTRATIVE" in (d / "leaderboard" / name).read_text(encoding="utf-8")
    ranked = {c["contestant"]: c for c in board.ratings["contestants"]}
    assert set(ranked) == {"assistant-personalized", "assistant-generic", "other-generic"}
    assert ranked["assistant-personalized"]["rank"] == 1  # the simulated people prefer answers using their facts
    excluded = {v["voter"]: v["reasons"] for v in board.voter_quality["voters"] if v["excluded"]}
    assert any("always_left" in r for r in excluded.values())
    assert board.votes_counted < board.votes
    assert sum(v["repeats"] for v in board.voter_quality["voters"]) > 0  # repeat battles were shown and voted
    pair = board.personalized_vs_generic["pairs"][0]
    assert pair["personalized"] == "assistant-personalized" and pair["win_rate"] > 0.5
    status = runner.invoke(app, ["arena", "status", str(d), "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["votes"] == 80
    assert runner.invoke(app, ["arena", "plan", str(d)]).exit_code == 0
    again = runner.invoke(app, ["arena", "demo", str(tmp_path), "--participants", "1"])  # a folder of others
    assert again.exit_code == 2


@pytest.fixture
def arena_db_pg(request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL schema (conftest.arena_db's postgres case)."""
    import os
    import uuid

    from sqlalchemy import text

    admin = request.getfixturevalue("pg_admin")
    schema = f"tb_arena_demo_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    request.addfinalizer(lambda: _drop(admin, schema))
    return f"{request.getfixturevalue('pg_url')}?options=-csearch_path%3D{schema}"


def _drop(admin: object, schema: str) -> None:
    from sqlalchemy import text

    with admin.connect() as conn:  # type: ignore[attr-defined]
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
