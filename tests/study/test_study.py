"""`tailor study` foundation (study/): the config's errors name the key path before any work; the bundled
example study runs from an empty directory to the report with simulated participants over HTTP on the real
annotation server (SQLite and PostgreSQL); plan's model-call counts equal the calls run makes; a kill -9
while a model step runs and while waiting repeats no step and duplicates no label."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tailorbench.errors import ConfigError
from tailorbench.files import MARKER
from tailorbench.humanstudy.config import load_config
from tailorbench.humanstudy.plan import study_plan
from tailorbench.humanstudy.run import advance, database
from tailorbench.humanstudy.simulate import Behaviour, participate, serving
from tests.study.helpers import register, study_yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    return register()


def _write(d: Path, text: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "study.yaml").write_text(text, encoding="utf-8")
    return d


def _edit(text: str, change: Any) -> str:
    data = yaml.safe_load(text)
    change(data)
    return yaml.safe_dump(data)


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d["stages"]["relevance"]["crowd"].update(placez=3), "stages.relevance.crowd.placez"),
    (lambda d: d["stages"]["extraction"].update(n="three"), "stages.extraction.n"),
    (lambda d: d["models"]["judges"].update(j1="nosuchbackend:x"), "models.judges.j1"),
    (lambda d: d["stages"].pop("relevance"), "stages.incorporation"),
    (lambda d: d.update(colour="red"), "colour"),
])
def test_a_config_error_names_the_key_path_before_any_work(scripted: Any, tmp_path: Path, change: Any,
                                                           where: str) -> None:
    d = _write(tmp_path / "s", _edit(study_yaml(), change))
    with pytest.raises(ConfigError) as err:
        advance(d)
    assert f"study.yaml: {where}:" in str(err.value)
    assert sorted(p.name for p in d.iterdir()) == ["study.yaml"]  # nothing written
    assert scripted.attempts == []


def _people(d: Path, waiting: dict[str, Any], tag: str, accuracy: float = 0.9) -> int:
    """Simulated participants through the stage's study link until the link admits nobody more."""
    cfg = load_config(d)
    db = database(cfg, d)
    n = 0
    try:
        with serving(db) as url:
            for i in range(60):
                got = participate(waiting["link"], f"{tag}{i}", Behaviour(accuracy), seed=1, base_url=url)
                if got.status != "finished":
                    break
                assert got.code == "DONE1"
                n += got.items
    finally:
        db.dispose()
    return n


def _whole_study(d: Path) -> list[dict[str, Any]]:
    results = []
    for rnd in range(4):
        got = advance(d)
        results.append(got)
        if got["finished"]:
            return results
        assert got["waiting"]["missing"] > 0
        _people(d, got["waiting"], f"p{rnd}x")
    raise AssertionError("the study did not finish")


def _model_calls(d: Path) -> dict[str, int]:
    state = json.loads((d / "state.json").read_text())
    out = {k: v["info"]["calls"] for k, v in state["steps"].items() if "calls" in v["info"]}
    out["incorporation.generate"] = state["steps"]["incorporation.generate"]["info"]["generations"]["calls"]
    return out


def test_example_study_from_empty_dir_to_report_with_simulated_people(scripted: Any, tmp_path: Path,
                                                                      db_url: str) -> None:
    """On SQLite and on PostgreSQL (db_url): init to report, simulated participants over HTTP."""
    d = _write(tmp_path / "s", study_yaml(db=db_url))
    plan = study_plan(load_config(d), d)
    assert sorted(p.name for p in d.iterdir()) == ["study.yaml"]  # plan writes nothing
    assert plan["steps"][0]["calls"] == 6 and plan["crowd_cost"]["relevance"]["cost"] == 45.0
    planned: dict[str, int] = {}
    results = []
    for rnd in range(4):
        # re-planned at each stop: every model step whose inputs exist has an exact count
        for s in study_plan(load_config(d), d)["steps"]:
            if s["kind"] == "model" and s["calls"] is not None and s["status"] != "done":
                planned[s["id"]] = s["calls"]
        got = advance(d)
        results.append(got)
        if got["finished"]:
            break
        _people(d, got["waiting"], f"p{rnd}x")
    assert results[-1]["finished"] and [r["waiting"]["stage"] for r in results[:-1]] == [
        "extraction", "relevance", "incorporation"]
    made = _model_calls(d)
    # plan before each run (the extractor's count from the start, the others once the labels they are built
    # from are in) gives every model step's count, and those are the calls run then made
    assert planned == made
    after = {s["id"]: s["calls"] for s in study_plan(load_config(d), d)["steps"] if s["kind"] == "model"}
    assert after == made
    # nothing asked twice (identical prompts across users come from the call cache)
    assert len(scripted.attempts) == len(set(scripted.attempts)) <= sum(made.values())
    report = json.loads((d / "report" / "study.json").read_text())
    assert set(report["stages"]) == {"extraction", "relevance", "incorporation"}
    rel = report["stages"]["relevance"]["figures"]
    assert "human_human" in rel and "human_model" in rel and "admissibility" in rel
    # the chain gives what the links give: the stage verb on the same export reproduces the report
    from tailorbench.threestage import verbs

    steps = d / "steps"
    again = verbs.relevance(model=[steps / "relevance.judge.j1" / "votes.jsonl"],
                            export=[steps / "relevance.collect" / "export" / "ratings.jsonl"],
                            items=steps / "relevance.items" / "items.jsonl", min_shared=2, n_resamples=50, seed=0,
                            min_items=3)
    assert json.loads(json.dumps(again, default=str)) == json.loads((d / "report" / "relevance.json").read_text())
    ex = verbs.extraction(steps / "extraction.extract" / "items.jsonl",
                          export=[steps / "extraction.collect" / "export" / "ratings.jsonl"], n_resamples=50, seed=0)
    assert json.loads(json.dumps(ex, default=str)) == json.loads((d / "report" / "extraction.json").read_text())
    inc = verbs.incorporation(steps / "incorporation.generate" / "ab_tasks.jsonl",
                              [steps / "incorporation.collect" / "export" / "ratings.jsonl",
                               steps / "incorporation.judge.j1" / "votes.jsonl"], n_resamples=50, seed=0)
    assert json.loads(json.dumps(inc, default=str)) == json.loads((d / "report" / "incorporation.json").read_text())
    # a second run does nothing
    assert advance(d)["ran"] == []
    # a changed config invalidates exactly the steps downstream of it, and says which
    _write(d, _edit(study_yaml(db=db_url), lambda c: c["models"]["judges"].update(j1="studyscripted:judge2")))
    stale = study_plan(load_config(d), d)["stale"]
    assert stale == ["relevance.judge.j1", "relevance.analyse", "incorporation.judge.j1", "incorporation.analyse",
                     "report"]


_KILL_SCRIPT = """
import sys, time
sys.path.insert(0, {root!r})
from tests.study.helpers import StudyScriptedAPI, register
register()
{patch}
if {slow}:
    real = StudyScriptedAPI.generate
    async def slow(self, messages, params):
        time.sleep(0.5)
        return await real(self, messages, params)
    StudyScriptedAPI.generate = slow
from tailorbench.humanstudy.run import advance
print("started", flush=True)
advance({d!r})
print("done", flush=True)
"""


#: the import of the annotate step, stopped for the kill just after its transaction committed ("after") or
#: before it began ("before")
_IMPORT_PATCH = """
from tailorbench.annotation import service
real_import = service.import_items
def stopped_import(*args, **kwargs):
    if {when!r} == "before":
        print("importing", flush=True)
        time.sleep(60)
    got = real_import(*args, **kwargs)
    print("importing", flush=True)
    time.sleep(60)
    return got
service.import_items = stopped_import
"""


def _run_killed(d: Path, env: dict[str, str], slow: bool, after_s: float, patch: str = "",
                wait_for: str | None = None) -> None:
    code = _KILL_SCRIPT.format(root=str(ROOT), d=str(d), slow=slow, patch=patch)
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    if wait_for is not None:
        assert proc.stdout.readline().strip() == wait_for
    time.sleep(after_s)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


def test_kill_9_during_a_model_step_and_while_waiting_repeats_nothing(scripted: Any, tmp_path: Path) -> None:
    env = {**os.environ, "TAILORBENCH_CALL_CACHE": str(tmp_path / "calls.sqlite")}
    d = _write(tmp_path / "s", study_yaml())
    _run_killed(d, env, slow=True, after_s=1.5)  # inside extraction.extract (6 calls, 0.5 s each)
    assert not (d / "steps" / "extraction.extract" / "step.json").exists()
    results = _whole_study(d)
    assert results[-1]["finished"]
    # killed while waiting for people: the next run finds everything done
    _run_killed(d, env, slow=False, after_s=0.0)
    assert advance(d)["ran"] == []
    # no duplicated label: each item has exactly its N labels
    cfg = load_config(d)
    from tailorbench.annotation import service

    db = database(cfg, d)
    try:
        for p in service.list_projects(db):
            got = service.progress(db, p["id"])
            assert got["labels_done"] == got["labels_needed"]
            rows = service.raw_labels(db, p["id"])
            assert len({(r["item"], r["rater"]) for r in rows}) == len(rows)
    finally:
        db.dispose()
    state = json.loads((d / "state.json").read_text())
    assert all(v["status"] == "done" for v in state["steps"].values())
    _same_report_as_uninterrupted(d, tmp_path / "plain")


def test_the_published_schema_is_the_models() -> None:
    from tailorbench.humanstudy.config import json_schema

    doc = (ROOT / "docs" / "study.md").read_text(encoding="utf-8")
    published = doc.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(published) == json_schema()


def test_cli_config_error_is_exit_2_with_the_key_path(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    d = _write(tmp_path / "s", _edit(study_yaml(), lambda c: c["stages"]["extraction"]["crowd"].update(places=0)))
    for verb in ("plan", "run", "status", "report"):
        res = CliRunner().invoke(app, ["study", verb, str(d)])
        assert res.exit_code == 2, (verb, res.output)
        assert "study.yaml: stages.extraction.crowd.places: " in res.output and "Traceback" not in res.output
    assert sorted(p.name for p in d.iterdir()) == ["study.yaml"]


def test_cli_demo_runs_the_bundled_example_from_init_to_report(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`tailor study demo`: init, the illustrative model, simulated participants over HTTP, the report labelled
    illustrative; then status, plan and report read the finished study."""
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    d = tmp_path / "demo"
    res = CliRunner().invoke(app, ["study", "demo", str(d), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["finished"] and set(got["participants"]) == {"extraction", "relevance", "incorporation"}
    assert all(p["status"] == "finished" and p["code"] for ps in got["participants"].values() for p in ps)
    md = (d / "report" / "study.md").read_text()
    assert "Illustrative only" in md and json.loads((d / "report" / "study.json").read_text())["illustrative"]
    # the study report opens with its headline; each number of a figures row is in its stage report's tables
    assert md.split("\n")[2] == "## Headline"
    for line in md.split("## Headline figures\n", 1)[1].split("\n## ", 1)[0].splitlines()[3:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        stage = (d / "report" / f"{cells[0].split(' ', 1)[1]}.md").read_text()
        tables = stage.split("## Headline\n", 1)[1].split("\n## ", 1)[1]
        assert all(n in tables for n in re.findall(r"\d+(?:\.\d+)?", " | ".join(cells[1:]))), line
    status = json.loads(CliRunner().invoke(app, ["study", "status", str(d), "--json"]).stdout)
    ex = status["stages"]["extraction"]
    assert status["finished"] and ex["labels_done"] == ex["labels_wanted"] == 18
    assert ex["crowd"]["open_places"] == 0 and len(ex["annotators"]) == 3
    plan = json.loads(CliRunner().invoke(app, ["study", "plan", str(d), "--json"]).stdout)
    assert {s["status"] for s in plan["steps"]} == {"done"} and plan["model_calls_known"]
    rep = CliRunner().invoke(app, ["study", "report", str(d), "--json"])
    assert rep.exit_code == 0 and set(json.loads(rep.stdout)["stages"]) == {"extraction", "relevance",
                                                                             "incorporation"}
    again = CliRunner().invoke(app, ["study", "init", str(d)])
    assert again.exit_code == 2 and "--force" in again.output
    # another process reads the demo's study (its illustrative model is known to any study labelled so)
    fresh = subprocess.run([sys.executable, "-m", "tailorbench.cli.app", "study", "status", str(d), "--json"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert fresh.returncode == 0, fresh.stderr
    assert json.loads(fresh.stdout)["finished"]
    # ... and only such a study may name it
    unlabelled = _write(tmp_path / "u", (d / "study.yaml").read_text().replace("illustrative: true",
                                                                              "illustrative: false"))
    for name in ("conversations.jsonl", "prompts.jsonl"):
        (unlabelled / name).write_bytes((d / name).read_bytes())
    res = CliRunner().invoke(app, ["study", "plan", str(unlabelled)])
    assert res.exit_code == 2 and "study.yaml: models.extractor: the illustrative model" in res.output


@pytest.mark.parametrize("when", ["before", "after"])
def test_kill_9_during_an_import_imports_once_and_opens_one_crowd_study(scripted: Any, tmp_path: Path,
                                                                        when: str) -> None:
    """Killed inside the annotate step (before the import's transaction, or after it committed but before the
    step was recorded): the next run imports nothing twice, opens no second project or study, and the study
    goes on to the same report as an uninterrupted one."""
    from tailorbench.annotation import service, studies

    env = {**os.environ, "TAILORBENCH_CALL_CACHE": str(tmp_path / "calls.sqlite")}
    d = _write(tmp_path / "s", study_yaml())
    _run_killed(d, env, slow=False, after_s=0.2, patch=_IMPORT_PATCH.format(when=when), wait_for="importing")
    assert "extraction.annotate" not in json.loads((d / "state.json").read_text())["steps"]
    got = advance(d)
    assert got["ran"] == ["extraction.annotate"] and got["waiting"]["labels_wanted"] == 12
    db = database(load_config(d), d)
    try:
        projects = service.list_projects(db)
        assert len(projects) == 1 and len(service.items_records(db, projects[0]["name"])) == 6
        assert len(studies.list_studies(db)) == 1
    finally:
        db.dispose()
    results = _whole_study(d)
    assert results[-1]["finished"]
    _same_report_as_uninterrupted(d, tmp_path / "plain")


def _same_report_as_uninterrupted(d: Path, plain: Path) -> None:
    """An uninterrupted run of the same study with the same simulated people gives the same stage reports (the
    study directory's name aside)."""
    _write(plain, (d / "study.yaml").read_text())
    assert _whole_study(plain)[-1]["finished"]
    for stage in ("extraction", "relevance", "incorporation"):
        a = (d / "report" / f"{stage}.json").read_text().replace(str(d), "STUDY")
        b = (plain / "report" / f"{stage}.json").read_text().replace(str(plain), "STUDY")
        assert json.loads(a) == json.loads(b), stage


def test_failed_model_calls_are_exit_3_and_the_step_is_asked_again(scripted: Any, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    d = _write(tmp_path / "s", study_yaml())
    monkeypatch.setenv("STUDY_TEST_FAIL", "1")
    res = CliRunner().invoke(app, ["study", "run", str(d)])
    assert res.exit_code == 3, res.output
    assert "study step extraction.extract: all 6 model calls failed" in res.output and "Traceback" not in res.output
    assert sorted(p.name for p in d.iterdir()) == ["run.lock", "steps", "study.yaml"]  # no state.json
    assert [p.name for p in (d / "steps").iterdir() if p.name != MARKER] == []  # no step folder: nothing recorded
    monkeypatch.delenv("STUDY_TEST_FAIL")
    res = CliRunner().invoke(app, ["study", "run", str(d), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["ran"] == ["extraction.extract", "extraction.annotate"]


def test_own_annotators_with_login_links_and_gold_items(scripted: Any, tmp_path: Path) -> None:
    """crowd kind `own`: each stage's annotators get login links (links.json, owner-only), log in over HTTP as a
    browser does and label everything; stage 1's gold items are imported once and scored in `status`."""
    from tailorbench.annotation import service
    from tailorbench.humanstudy.simulate import annotate_as
    from tailorbench.humanstudy.status import study_status

    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "gold-1", "user_id": "g", "conversation": "I am vegan.",
                                "attributes": ["The user is vegan.", "The user lives in Rome."],
                                "gold": {"1": "accepted", "2": "rejected"}}) + "\n")

    def own(c: dict[str, Any]) -> None:
        for stage in c["stages"].values():
            stage["crowd"] = {"kind": "own", "annotators": ["ann-a", "ann-b"]}
            stage["gold_every"] = 2
        c["stages"]["extraction"]["gold"] = str(gold)

    d = _write(tmp_path / "s", _edit(study_yaml(), own))
    for _ in range(4):
        got = advance(d)
        if got["finished"]:
            break
        stage = got["waiting"]["stage"]
        links_file = d / "steps" / f"{stage}.annotate" / "links.json"
        assert oct(links_file.stat().st_mode & 0o777) == "0o600"
        links = json.loads(links_file.read_text())
        db = database(load_config(d), d)
        try:
            project = json.loads((d / "steps" / f"{stage}.annotate" / "project.json").read_text())["project"]
            pid = next(p["id"] for p in service.list_projects(db) if p["name"] == project)
            with serving(db) as url:
                for name, link in links.items():
                    assert link.startswith("http://127.0.0.1:1/login/")
                    out = annotate_as(url, link, pid, name, Behaviour(0.9), seed=2)
                    assert out.items > 0
        finally:
            db.dispose()
        if stage == "extraction":
            st = study_status(d)["stages"]["extraction"]
            assert st["labels_done"] == st["labels_wanted"] == 12 and "crowd" not in st
            assert all(q["gold_items"] == 1 for q in st["annotators"].values())
    assert got["finished"]
    report = json.loads((d / "report" / "study.json").read_text())
    assert report["stages"]["extraction"]["labels"]["items"] == 6  # gold left out of the export


def test_interventions_when_asked_are_trained_on_the_study_labels(scripted: Any, tmp_path: Path) -> None:
    """report.interventions: the verifier (stage 1) and the relevance classifier (stage 2) are trained on the
    study's own exports and judged on held-out users, and the study report carries them."""
    d = _write(tmp_path / "s", _edit(study_yaml(), lambda c: c.setdefault("report", {}).update(interventions=True)))
    assert _whole_study(d)[-1]["finished"]
    body = json.loads((d / "report" / "study.json").read_text())
    assert body["interventions"] == {"verifier": "verifier.json", "relevance_classifier": "relevance_classifier.json"}
    verifier = json.loads((d / "report" / "verifier.json").read_text())
    assert verifier["split"]["heldout_users"] and "acceptance" in verifier
    assert "held-out" in (d / "report" / "summary.md").read_text()


def test_run_watch_continues_as_people_label_and_gives_up_after_max_wait(scripted: Any, tmp_path: Path) -> None:
    """`run --watch` (tb.study.run(watch=True)): with nobody labelling it returns after --max-wait, still
    waiting; with simulated participants arriving while it watches, it goes on to the report by itself."""
    import threading

    import tailorbench as tb

    d = _write(tmp_path / "s", study_yaml())
    got = tb.study.run(d, watch=True, interval_s=0.1, max_wait_s=0.5)
    assert not got.finished and got.waiting is not None and got.waiting["stage"] == "extraction"
    done: list[str] = []

    def people() -> None:
        for stage in ("extraction", "relevance", "incorporation"):
            project = d / "steps" / f"{stage}.annotate" / "project.json"
            deadline = time.monotonic() + 120
            while not project.is_file() and time.monotonic() < deadline:
                time.sleep(0.05)
            link = json.loads(project.read_text())["link"]
            _people(d, {"link": link}, f"w{stage[:3]}")
            done.append(stage)

    worker = threading.Thread(target=people, daemon=True)
    worker.start()
    got = tb.study.run(d, watch=True, interval_s=0.2, max_wait_s=300)
    worker.join(30)
    assert got.finished and done == ["extraction", "relevance", "incorporation"]
    assert (d / "report" / "study.json").is_file()
