"""A study folder a user can touch (docs/study.md, "A study folder a user can touch"): every case here failed at
commit 97f6c24 (data loss, a traceback, or a silent misread) and is now exit 2 naming the file or key, or handled.
The report place is claimed through files.py's door; state.json, run.lock and the annotation database of the
wrong shape are exit 2 naming them; step outputs are fingerprinted; a killed `study demo` goes on; simulated
participants give their places back when they stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.humanstudy.config import load_config
from tailorbench.humanstudy.run import advance, database
from tailorbench.humanstudy.state import StudyState
from tests.study.helpers import study_yaml
from tests.study.test_study import _edit, _people, _write, scripted

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["scripted"]


def _listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def _refused(args: list[str], *needles: str) -> str:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, (args, res.output)
    assert "Traceback" not in res.output and res.output.count("error:") == 1, res.output
    for needle in needles:
        assert needle in res.output, (needle, res.output)
    return res.output


@pytest.mark.parametrize("place", [".", "..", "ABSOLUTE", "steps", "steps/extraction.extract", "annotation",
                                   "report/../..", "state.json"])
def test_a_report_dir_over_or_outside_the_study_is_refused_at_load(tmp_path: Path, place: str) -> None:
    """At 97f6c24 `report: {dir: .}` made the report step rmtree the whole study (the annotation database and
    every human label with it) and then print a traceback; `dir: ..` removed the folder above (a stranger's
    thesis.tex); an absolute dir replaced a foreign folder's files with exit 0; `study plan` accepted all
    three. Now every verb refuses the config, exit 2 naming report.dir, and nothing is written anywhere."""
    thesis = tmp_path / "thesis.tex"
    thesis.write_text("years of work\n")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.csv").write_text("a,b\n")
    value = str(foreign) if place == "ABSOLUTE" else place
    d = _write(tmp_path / "s", _edit(study_yaml(), lambda c: c.setdefault("report", {}).update(dir=value)))
    before = _listing(tmp_path)
    for verb in ("plan", "run", "status", "report"):
        _refused(["study", verb, str(d)], "report.dir")
    assert _listing(tmp_path) == before
    assert thesis.read_text() == "years of work\n" and (foreign / "data.csv").read_text() == "a,b\n"


def test_a_report_dir_holding_the_database_or_someone_elses_files_is_refused(scripted: Any, tmp_path: Path) -> None:
    """A report folder that holds the study's SQLite database is refused at load (by the paths); one holding
    files no study report wrote is refused by `run` through the door before any work (at 97f6c24 the report
    step removed both)."""
    d = _write(tmp_path / "s", _edit(study_yaml(db=str(tmp_path / "s" / "results" / "labels.sqlite")),
                                     lambda c: c.setdefault("report", {}).update(dir="results")))
    _refused(["study", "plan", str(d)], "report.dir", "annotation.db")
    d = _write(tmp_path / "t", _edit(study_yaml(), lambda c: c.setdefault("report", {}).update(dir="notes")))
    (d / "notes").mkdir()
    (d / "notes" / "mine.txt").write_text("keep\n")
    _refused(["study", "run", str(d)], "report.dir", "did not write")
    assert _listing(d) == ["notes", "notes/mine.txt", "study.yaml"]


@pytest.mark.parametrize("name", ["../../outside", "../../../../outside", "a/b", ".hidden", ""])
def test_a_judge_name_that_would_lead_outside_the_steps_folder_is_refused(scripted: Any, tmp_path: Path,
                                                                           name: str) -> None:
    """A judge's name names its step folders (steps/relevance.judge.NAME): at 97f6c24 any text was taken into
    that path, so `../../outside` led out of the steps folder (and more `..` out of the study). Now the config is
    refused, exit 2 naming the key, nothing written."""
    d = _write(tmp_path / "s", _edit(study_yaml(), lambda c: c["models"].update(judges={name: "studyscripted:j"})))
    _refused(["study", "plan", str(d)], "models.judges")
    assert _listing(tmp_path) == ["s", "s/study.yaml"]


@pytest.mark.parametrize(("content", "needle"), [
    ("[]", "state.json"),
    ('{"steps": "x"}', "steps"),
    ('{"version": 1, "steps": {"extraction.extract": {"fingerprint": 5, "status": "done"}}}',
     "steps.extraction.extract.fingerprint"),
    ('{"version": true, "steps": {}}', "version"),
    ('{"steps": {"extraction.annotate": {"fingerprint": "f", "status": "done", "info": {"project": 3}}}}',
     "steps.extraction.annotate.info.project"),
    ('{"steps": {"extraction.extract": {"fingerprint": "f", "status": "done", "info": [1]}}}', "info"),
    ('{"steps": {"x": {"fingerprint": "f", "status": "done", "outputs": {"a": 1}}}}', "outputs.a"),
    ("\xff\xfe{", "state.json"),
    ("DIRECTORY", "is a directory"),
])
def test_state_json_of_the_wrong_shape_is_exit_2_naming_it(scripted: Any, tmp_path: Path, content: str,
                                                            needle: str) -> None:
    """At 97f6c24 a hand-edited state.json of the wrong types was a traceback (AttributeError / TypeError /
    IsADirectoryError) in plan, status and run. Now each is exit 2 naming state.json and the field."""
    d = _write(tmp_path / "s", study_yaml())
    state = d / "state.json"
    if content == "DIRECTORY":
        state.mkdir()
    else:
        state.write_bytes(content.encode("latin-1"))
    for verb in ("plan", "status", "run"):
        _refused(["study", verb, str(d)], "state.json", needle)


def test_run_lock_a_directory_is_exit_2_naming_it(scripted: Any, tmp_path: Path) -> None:
    """At 97f6c24 a directory where run.lock goes was an IsADirectoryError traceback in `study run`."""
    d = _write(tmp_path / "s", study_yaml())
    (d / "run.lock").mkdir()
    _refused(["study", "run", str(d)], "run.lock")
    assert _listing(d) == ["run.lock", "study.yaml"]


def _foreign_sqlite(path: Path, revision: str | None) -> None:
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        if revision is None:
            conn.execute(text("create table thesis (chapter text)"))
        else:
            conn.execute(text("create table alembic_version (version_num varchar(32) not null)"))
            conn.execute(text(f"insert into alembic_version values ('{revision}')"))
    engine.dispose()


@pytest.mark.parametrize("kind", ["garbage", "directory", "foreign", "unknown revision", "unreachable"])
def test_an_unusable_annotation_database_is_exit_2_naming_it(scripted: Any, tmp_path: Path, kind: str) -> None:
    """At 97f6c24 a garbage SQLite file, a directory, an unreachable PostgreSQL URL as annotation.db were a
    traceback from SQLAlchemy or Alembic when the annotate step opened it (and `tailor annotate` verbs alike).
    Now `study run` stops with exit 2 naming the database (the PostgreSQL URL without its password), and so does
    `tailor annotate project list --db`; a foreign SQLite file is not migrated into."""
    db = tmp_path / "labels.sqlite"
    if kind == "garbage":
        db.write_bytes(b"not a database at all\n" * 10)
    elif kind == "directory":
        db.mkdir()
    elif kind == "foreign":
        _foreign_sqlite(db, None)
    elif kind == "unknown revision":
        _foreign_sqlite(db, "from-the-future")
    url = "postgresql+psycopg://postgres:hunter2@127.0.0.1:1/test" if kind == "unreachable" else str(db)
    shown = "postgresql+psycopg://postgres:***@127.0.0.1:1/test" if kind == "unreachable" else str(db)
    before = db.read_bytes() if db.is_file() else None
    d = _write(tmp_path / "s", study_yaml(db=url))
    out = _refused(["study", "run", str(d)], f"annotation database {shown}")
    assert "hunter2" not in out
    _refused(["annotate", "project", "list", "--db", url], f"annotation database {shown}")
    if before is not None:
        assert db.read_bytes() == before  # nothing written into someone else's file


def test_a_database_at_an_unknown_schema_revision_is_exit_2(tmp_path: Path, db_url: str) -> None:
    """SQLite and PostgreSQL (db_url): a database whose alembic_version names a revision this version does not
    know (a newer tailorbench's, or another application's) is exit 2 naming it, never migrated over (at
    97f6c24: an Alembic CommandError traceback)."""
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("create table alembic_version (version_num varchar(32) not null)"))
        conn.execute(text("insert into alembic_version values ('from-the-future')"))
    engine.dispose()
    _refused(["annotate", "project", "list", "--db", db_url], "annotation database", "schema is not one")


def test_a_database_missing_a_table_is_exit_2(tmp_path: Path, db_url: str) -> None:
    """SQLite and PostgreSQL (db_url): an annotation database at the newest revision whose tables were changed
    by hand (a table dropped) is exit 2 naming the table when opened, not an error mid-request later."""
    from tailorbench.annotation.db import Database

    Database(db_url).dispose()
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("drop table tb_participants"))
    engine.dispose()
    _refused(["annotate", "project", "list", "--db", db_url], "annotation database", "tb_participants is missing")


def test_a_step_output_edited_by_hand_is_exit_2_naming_the_file(scripted: Any, tmp_path: Path) -> None:
    """At 97f6c24 an edited steps/extraction.extract/items.jsonl was used silently by the steps after it. Now
    every verb that reads the state says which file changed (exit 2); put back, the study goes on; with the
    step's folder removed, `run` makes the step again, and the steps after it stay done when it comes out the
    same."""
    d = _write(tmp_path / "s", study_yaml())
    got = advance(d)
    assert got["ran"] == ["extraction.extract", "extraction.annotate"]
    items = d / "steps" / "extraction.extract" / "items.jsonl"
    original = items.read_bytes()
    items.write_bytes(original.replace(b"The user", b"The person", 1))
    for verb in ("plan", "status", "run"):
        _refused(["study", verb, str(d)], f"{items}: was changed after step extraction.extract finished")
    items.write_bytes(original)
    assert advance(d)["ran"] == []
    items.unlink()
    _refused(["study", "run", str(d)], f"{items}: was removed")
    import shutil

    shutil.rmtree(items.parent)
    got = advance(d)
    assert got["ran"] == ["extraction.extract"] and got["waiting"]["stage"] == "extraction"
    assert items.read_bytes() == original


def test_a_step_made_again_with_other_outputs_makes_the_steps_after_it_stale(scripted: Any, tmp_path: Path) -> None:
    """The steps after a step read its outputs' digests (`uses`): when the step is made again and its outputs
    differ (here: its record and marker rewritten as a new run of it would), the steps that read the old ones are
    stale and redone, where at 97f6c24 they stayed done on outputs that were gone."""
    from tailorbench.humanstudy.plan import study_plan
    from tailorbench.humanstudy.state import output_hashes

    d = _write(tmp_path / "s", study_yaml())
    advance(d)
    folder = d / "steps" / "extraction.extract"
    items = folder / "items.jsonl"
    items.write_bytes(items.read_bytes().replace(b"The user", b"The person", 1))
    state = json.loads((d / "state.json").read_text())
    state["steps"]["extraction.extract"]["outputs"] = output_hashes(folder)
    (d / "state.json").write_text(json.dumps(state))
    marker = json.loads((folder / "step.json").read_text())
    marker["outputs"] = output_hashes(folder)
    (folder / "step.json").write_text(json.dumps(marker))
    plan = study_plan(load_config(d), d)
    assert plan["stale"] == ["extraction.annotate"]
    assert [s["status"] for s in plan["steps"][:2]] == ["done", "stale"]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_state_json_names_only_paths_that_exist(scripted: Any, tmp_path: Path) -> None:
    """At 97f6c24 state.json recorded the scratch folder a step was made in (relevance.items' `out` named
    steps/.tmp-relevance.items-PID/items.jsonl, gone once the step was in place). Now every path it names is
    the step's final one and exists; each finished step records its outputs' digests."""
    d = _write(tmp_path / "s", study_yaml())
    got = advance(d)
    _people(d, got["waiting"], "p")
    got = advance(d)
    assert "relevance.items" in got["ran"]
    state = json.loads((d / "state.json").read_text())
    paths = [s for s in _strings(state["steps"]) if s.startswith(str(d))]
    assert paths and all(Path(p).exists() for p in paths), paths
    assert not any(".tmp" in p for p in paths)
    assert state["steps"]["relevance.items"]["info"]["out"] == str(d / "steps" / "relevance.items" / "items.jsonl")
    assert all(rec["outputs"] for rec in state["steps"].values())


_DEMO_KILLED = """
import os, signal, sys
sys.path.insert(0, {root!r})
from tailorbench.humanstudy import simulate
real = simulate.page_answers
seen = []
def answers(*args, **kwargs):
    seen.append(1)
    if len(seen) == 9:  # the second participant of stage 1, at their third item
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)
simulate.page_answers = answers
import tailorbench as tb
tb.study.demo({d!r})
"""


def test_a_killed_demo_is_continued_by_demo_and_its_participants_release_their_places(tmp_path: Path) -> None:
    """At 97f6c24 `tailor study demo DIR` killed mid-way could not be continued (exit 2: DIR must be new or
    empty) and the killed participant kept their crowd place until the time limit. Now the same command goes
    on to the report; the participant the killed process left mid-way is released (status returned), their
    unfinished items back in the queue."""
    from tailorbench.annotation import studies

    d = tmp_path / "demo"
    env = {**os.environ, "TAILORBENCH_CALL_CACHE": str(tmp_path / "calls.sqlite"), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-c", _DEMO_KILLED.format(root=str(ROOT), d=str(d))], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    config = load_config(d)
    study = StudyState(d, readonly=True).info("extraction.annotate")["study"]
    db = database(config, d)
    try:
        left = {p["external_id"]: p["status"] for p in studies.participants(db, study)}
    finally:
        db.dispose()
    assert left == {"sim-extraction-1": "finished", "sim-extraction-2": "active"}
    res = CliRunner().invoke(app, ["study", "demo", str(d), "--json"], env={"TAILORBENCH_CALL_CACHE":
                                                                           str(tmp_path / "calls.sqlite")})
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["finished"]
    assert json.loads((d / "report" / "study.json").read_text())["illustrative"]
    db = database(config, d)
    try:
        after = {p["external_id"]: p["status"] for p in studies.participants(db, study)}
    finally:
        db.dispose()
    assert after["sim-extraction-1"] == "finished" and after["sim-extraction-2"] == "returned"
    assert sum(s == "finished" for s in after.values()) >= 2 and "active" not in after.values()


def test_a_simulated_participant_who_stops_gives_the_place_back(scripted: Any, tmp_path: Path) -> None:
    """At 97f6c24 a simulated participant who stopped mid-way (`stop_after`) kept their place and their
    unfinished items until the study's time limit. Now `simulate.crowd` releases them as the platform's return
    does: the study has every place open again."""
    from tailorbench.annotation import studies
    from tailorbench.humanstudy.simulate import Behaviour, crowd, serving
    from tailorbench.humanstudy.status import study_status

    d = _write(tmp_path / "s", study_yaml(places=2))
    got = advance(d)
    study = StudyState(d, readonly=True).info("extraction.annotate")["study"]
    db = database(load_config(d), d)
    try:
        with serving(db) as url:
            out = crowd(db, study, got["waiting"]["link"], [("quitter", Behaviour())], seed=1, base_url=url,
                        stop_after=2)
        assert [(o.participant, o.status, o.items) for o in out] == [("quitter", "stopped", 2)]
        assert [p["status"] for p in studies.participants(db, study)] == ["returned"]
    finally:
        db.dispose()
    crowd_state = study_status(d)["stages"]["extraction"]["crowd"]
    assert crowd_state["open_places"] == crowd_state["places"] == 2


def test_init_and_demo_on_a_foreign_folder_create_nothing(tmp_path: Path) -> None:
    """`study init` / `study demo` into a folder holding someone else's files, or under a regular file, are
    exit 2 and create nothing (at 97f6c24 init wrote its three files beside the user's, and demo on a path
    under a file was a traceback after making nothing usable)."""
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep\n")
    _refused(["study", "init", str(foreign)], "did not write")
    _refused(["study", "demo", str(foreign)], "new or empty directory")
    assert _listing(foreign) == ["notes.txt"]
    plain = tmp_path / "plain.txt"
    plain.write_text("x\n")
    for verb in ("init", "demo"):
        _refused(["study", verb, str(plain / "sub")], "not a directory")
    assert _listing(tmp_path) == ["mine", "mine/notes.txt", "plain.txt"]


def test_status_of_a_study_whose_database_was_removed_creates_nothing(scripted: Any, tmp_path: Path) -> None:
    """Found by the CLI fuzz walk: at 97f6c24 `study status` on a study whose annotation database was removed
    created an empty one (status is read-only) before it said the project is missing. Now exit 2 naming the
    database, and nothing is created."""
    d = _write(tmp_path / "s", study_yaml())
    got = advance(d)
    _people(d, got["waiting"], "p")
    advance(d)
    assert StudyState(d, readonly=True).info("extraction.annotate").get("project") is not None
    db_file = d / "annotation" / "annotate.sqlite"
    for path in d.glob("annotation/annotate.sqlite*"):
        path.unlink()
    before = _listing(d)
    _refused(["study", "status", str(d)], "annotate.sqlite", "missing")
    assert _listing(d) == before and not db_file.exists()
