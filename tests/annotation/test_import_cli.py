"""Imports (formats, errors naming file/line/field, all-or-nothing), the schema migrations, the CLI verbs and
the export read back by agreement/ (`tailor agree`, `tailor tiers`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select
from typer.testing import CliRunner

from tailorbench.agreement.ratings import read_annotation_export
from tailorbench.annotation import service, tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Base, Item
from tailorbench.cli.app import app as cli_app
from tailorbench.errors import ConfigError, DataError
from tests.annotation.conftest import DATA, vote_all
from tests.conftest import assert_loopback

runner = CliRunner()


def _n_items(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(Item)) or 0


def test_migrations_match_models(db: Database) -> None:
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_import_formats(db: Database) -> None:
    service.create_project(db, "pw", "pairwise", 3)
    assert service.import_items(db, "pw", DATA / "pipeline.jsonl")["format"] == "pipeline"
    assert service.import_items(db, "pw", DATA / "paircase.jsonl")["format"] == "paircase"
    items = {r["id"]: r for r in service.items_records(db, "pw")}
    assert items["pl0"]["answer_a"] == "with persona" and items["pl0"]["meta"]["persona_mode"] == "full"
    assert items["pc0"]["meta"]["source_tier"] == "easy" and items["pc5"]["gold"] == "A"
    service.create_project(db, "att", "attributes", 3)
    with pytest.raises(DataError, match="pairwise projects only"):
        service.import_items(db, "att", DATA / "paircase.jsonl", "paircase")


@pytest.mark.parametrize(
    ("task", "row", "field"),
    [
        ("pairwise", {"id": "x", "split": "general", "user_id": "u", "question": "q", "answer_a": "a"}, "answer_b"),
        ("pairwise", {"id": "x", "split": "weird", "user_id": "u", "question": "q", "answer_a": "a",
                      "answer_b": "b"}, "split"),
        ("attributes", {"id": "x", "conversation": [], "attributes": ["a"]}, "conversation"),
        ("attributes", {"id": "x", "conversation": "hi", "attributes": ["a", {"id": "1", "text": "b"}]},
         "attributes[1]"),
        ("relevance", {"id": "x", "prompt": "p", "attributes": ["a"], "gold": {"1": "yes"}}, "gold"),
        ("ab_rating", {"id": "x", "prompt": "p", "generic": "g", "attributes": ["a"]}, "personalized"),
        ("ab_rating", {"prompt": "p", "generic": "g", "personalized": "q", "attributes": ["a"]}, "id"),
    ],
)
def test_bad_line_names_file_line_field_and_stores_nothing(db: Database, tmp_path: Path, task: str,
                                                          row: dict[str, Any], field: str) -> None:
    service.create_project(db, "p", task, 2)
    good = json.loads((DATA / f"{task}.jsonl").read_text().splitlines()[0])
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError) as err:
        service.import_items(db, "p", path, "items")
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 3, field)
    assert _n_items(db) == 0


def test_duplicates_and_bad_json_store_nothing(db: Database, tmp_path: Path) -> None:
    service.create_project(db, "pw", "pairwise", 2)
    service.import_items(db, "pw", DATA / "pipeline.jsonl")
    before = _n_items(db)
    lines = (DATA / "pipeline.jsonl").read_text().splitlines()
    path = tmp_path / "again.jsonl"
    path.write_text(lines[0].replace('"pl0"', '"new1"') + "\n" + lines[1] + "\n")
    with pytest.raises(DataError, match="already in project") as err:
        service.import_items(db, "pw", path)
    assert err.value.line == 2
    path.write_text(lines[0].replace('"pl0"', '"n1"') + "\n" + lines[0].replace('"pl0"', '"n1"') + "\n")
    with pytest.raises(DataError, match="duplicate id"):
        service.import_items(db, "pw", path)
    path.write_text(lines[0].replace('"pl0"', '"n2"') + "\n{not json\n")
    with pytest.raises(DataError) as err:
        service.import_items(db, "pw", path)
    assert err.value.line == 2
    assert _n_items(db) == before


def test_config_errors(db: Database) -> None:
    with pytest.raises(ConfigError, match="unknown task type"):
        service.create_project(db, "x", "ranking", 2)
    service.create_project(db, "x", "pairwise", 2)
    with pytest.raises(ConfigError, match="already exists"):
        service.create_project(db, "x", "pairwise", 2)
    service.add_user(db, "ann")
    with pytest.raises(ConfigError, match="already exists"):
        service.add_user(db, "ann")
    with pytest.raises(service.NotFound):
        service.add_user(db, "bob", projects=["nope"])


def test_parse_form_is_canonical_whatever_the_order() -> None:
    pay = {"answer_a": "a", "answer_b": "b", "attributes": [{"key": "k", "text": "t"}]}
    assert tasks.parse_form("pairwise", pay, {"swap": False}, {"choice": "1"})["choice"] == "A"
    assert tasks.parse_form("pairwise", pay, {"swap": True}, {"choice": "1"})["choice"] == "B"
    assert tasks.parse_form("ab_rating", pay, {"swap": False}, {"s_k": "5"})["ratings"] == {"k": 2}
    assert tasks.parse_form("ab_rating", pay, {"swap": True}, {"s_k": "5"})["ratings"] == {"k": -2}
    view = tasks.view("pairwise", {**pay, "question": "q"}, {"swap": True})
    assert view["answers"] == ["b", "a"]


def test_cli_end_to_end_and_tiers(db_url: str, tmp_path: Path) -> None:
    base = ["--db", db_url]

    def cli(*args: str) -> Any:
        result = runner.invoke(cli_app, ["annotate", *args, *base, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    cli("project", "create", "pw", "--task", "pairwise", "--n", "3", "--instructions", "Pick one.")
    assert cli("import", "pw", str(DATA / "paircase.jsonl"))["items"] == 5
    links = [cli("annotator", "add", f"a{i}", "--project", "pw")["login_link"] for i in range(3)]
    assert all("/login/" in link for link in links)
    assert cli("annotator", "add", "boss", "--admin")["role"] == "admin"
    bad = runner.invoke(cli_app, ["annotate", "import", "pw", str(DATA / "paircase.jsonl"), *base])
    assert bad.exit_code == 2 and "already in project" in bad.output
    store = Database(db_url)
    try:
        vote_all(store, "pw", {"a0": "1", "a1": "1", "a2": "2"})
    finally:
        store.dispose()
    prog = cli("progress", "pw", "--agreement")
    assert prog["labels_done"] == 15 and prog["items_complete"] == 5
    assert prog["agreement"]["available"] is True
    summary = cli("export", "pw", "--out", str(tmp_path / "out"))
    assert summary["benchmark_cases"] == 5 and summary["ratings"] == 15
    rs = read_annotation_export(tmp_path / "out" / "ratings.jsonl")
    assert {r.label for r in rs.ratings} == {"A", "B"} and len(rs.ratings) == 15
    assert len(read_annotation_export(tmp_path / "out" / "ratings.csv").ratings) == 15
    # the export is exactly what `tailor tiers` reads
    tiers = runner.invoke(cli_app, ["tiers", str(tmp_path / "out" / "ratings.jsonl"), "--items",
                                    str(tmp_path / "out" / "items.jsonl"), "--out", str(tmp_path / "b.jsonl"),
                                    "--json", "--resamples", "50"])
    assert tiers.exit_code == 0, tiers.output
    cases = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert len(cases) == 5 and {c["tier"] for c in cases} == {"hard"}  # 2-1 votes: P_i = 1/3
    assert all(c["chosen"].startswith("A vegetarian curry") for c in cases)
    agree = runner.invoke(cli_app, ["agree", str(tmp_path / "out" / "ratings.jsonl"), "--json", "--resamples", "50"])
    assert agree.exit_code == 0, agree.output


def test_serve_command_starts_and_serves(tmp_path: Path) -> None:
    """`tailor annotate serve` in its own process: migrations on start, pages and static files served."""
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.annotation.conftest import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tailorbench.cli.app", "annotate", "serve", "--dir",
                             str(tmp_path / "proj"), "--port", str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        assert_loopback(proc, "tailor annotate serve")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/app.js", timeout=5) as r:
            assert b"keydown" in r.read()
        assert (tmp_path / "proj" / "annotate.sqlite").is_file()
    finally:
        proc.terminate()
        proc.wait(10)
