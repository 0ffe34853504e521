"""`stages.incorporation.humans`: people rate a sample of stage 3's tasks (the annotate step imports only the
drawn tasks, and `plan` counts them), the judges rate every task, and the study report shows the judge-only
figure beside the human-anchored one; with `share: 1` the anchored figure is people's own; a bad `humans:`
block is exit 2 naming the key. The bundled example's users, the scripted model, simulated participants over
HTTP on SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tailorbench.estimation.records import EstimateReport
from tailorbench.humanstudy.config import load_config
from tailorbench.humanstudy.plan import study_plan
from tailorbench.humanstudy.status import study_status
from tests.study.helpers import register, study_yaml
from tests.study.test_study import _edit, _people, _write

MEASURES = ("share_no_better", "mean_rating")


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    return register()


def _with_humans(humans: dict[str, Any]) -> str:
    return _edit(study_yaml(), lambda c: c["stages"]["incorporation"].update(humans=humans))


def _run_to_report(d: Path) -> dict[str, Any]:
    """The study to its report; the plan's count of stage-3 tasks people rate, taken before the annotate step
    ran, beside what the annotate step imported and the labels status wants."""
    from tailorbench.humanstudy.run import advance

    counted: dict[str, Any] = {}
    for rnd in range(4):
        for s in study_plan(load_config(d), d)["steps"]:
            if s["id"] == "incorporation.annotate" and s["people"] is not None and s["status"] != "done":
                counted = s["people"]
        got = advance(d)
        if got["finished"]:
            return counted
        if got["waiting"]["stage"] == "incorporation":
            wanted = study_status(d)["stages"]["incorporation"]["labels_wanted"]
            assert wanted == counted["labels_wanted"]
        _people(d, got["waiting"], f"p{rnd}x")
    raise AssertionError("the study did not finish")


def test_people_rate_a_sample_and_the_report_shows_judge_only_beside_anchored(scripted: Any,
                                                                               tmp_path: Path) -> None:
    d = _write(tmp_path / "s", _with_humans({"share": 0.5, "sampling": "stratified", "seed": 3}))
    counted = _run_to_report(d)
    steps = d / "steps"
    tasks = [json.loads(line) for line in (steps / "incorporation.generate" / "ab_tasks.jsonl").open()]
    shown = [json.loads(line) for line in (steps / "incorporation.annotate" / "tasks.jsonl").open()]
    sample = json.loads((steps / "incorporation.annotate" / "sample.json").read_text())
    project = json.loads((steps / "incorporation.annotate" / "project.json").read_text())
    # plan counted what run did: the drawn tasks, and only those went to people
    assert counted == {"tasks": len(tasks), "sampled": len(shown), "sampling": "stratified",
                       "labels_wanted": 2 * len(shown)}
    assert len(shown) == round(0.5 * len(tasks)) == project["imported"]["items"] == sample["sampled"]
    assert [t["id"] for t in shown] == [t["id"] for t in tasks if t["id"] in sample["entries"]]
    assert {e["stratum"] for e in sample["entries"].values()} == {"gold/all", "none/all"}
    rated = {r["item"].split("::")[0] for r in map(json.loads, (steps / "incorporation.collect" / "export"
                                                                / "ratings.jsonl").open())}
    assert rated == set(sample["entries"])
    # the judge rated every task
    judged = {r["item"].split("::")[0] for r in map(json.loads, (steps / "incorporation.judge.j1"
                                                                 / "votes.jsonl").open())}
    assert judged == {t["id"] for t in tasks}
    report = json.loads((d / "report" / "study.json").read_text())
    anchored = report["stages"]["incorporation"]["figures"]["anchored"]["j1"]
    for measure in MEASURES:
        f = anchored[measure]
        assert f["judge_only"] is not None and f["anchored"] is not None and f["human_only"] is not None
        assert f["tasks"] == len(tasks) and f["tasks_rated_by_people"] == len(shown)
        assert f["judge_minus_anchored"] == pytest.approx(f["judge_only"]["estimate"] - f["anchored"]["estimate"])
        est = EstimateReport.read(d / "report" / f"anchored.j1.{measure}.json")
        assert isinstance(est, EstimateReport) and est.design == "stratified" and est.n_labels == len(shown)
    md = (d / "report" / "study.md").read_text()
    assert "Stage 3: judge-only and human-anchored" in md and "share no better" in md
    assert "Human-anchored estimate" in (d / "report" / "anchored.md").read_text()


def test_share_1_gives_an_anchored_figure_equal_to_peoples_own(scripted: Any, tmp_path: Path) -> None:
    d = _write(tmp_path / "s", _with_humans({"share": 1, "sampling": "uniform", "estimate": "anchored"}))
    counted = _run_to_report(d)
    assert counted["sampled"] == counted["tasks"] == 18
    report = json.loads((d / "report" / "study.json").read_text())
    anchored = report["stages"]["incorporation"]["figures"]["anchored"]["j1"]
    for measure in MEASURES:
        f = anchored[measure]
        assert f["tasks_rated_by_people"] == f["tasks"]
        assert f["anchored"]["estimate"] == pytest.approx(f["human_only"]["estimate"], abs=1e-12)
        assert f["anchored"]["ci"] == pytest.approx(f["human_only"]["ci"], abs=1e-12)
    # ... and equal to the stage report's human figure over every rated attribute
    stage = json.loads((d / "report" / "incorporation.json").read_text())["humans"]["per_item_mean"]
    assert anchored["share_no_better"]["anchored"]["estimate"] == pytest.approx(stage["share_no_better"])
    assert anchored["mean_rating"]["anchored"]["estimate"] == pytest.approx(stage["mean_rating"])


@pytest.mark.parametrize(("humans", "stage", "where"), [
    ({"share": 0}, "incorporation", "stages.incorporation.humans.share"),
    ({"share": 1.5}, "incorporation", "stages.incorporation.humans.share"),
    ({"share": "half"}, "incorporation", "stages.incorporation.humans.share"),
    ({"sampling": "uniform"}, "incorporation", "stages.incorporation.humans.share"),
    ({"share": 0.5, "sampling": "random"}, "incorporation", "stages.incorporation.humans.sampling"),
    ({"share": 0.5, "estimate": "judge"}, "incorporation", "stages.incorporation.humans.estimate"),
    ({"share": 0.5, "shares": 2}, "incorporation", "stages.incorporation.humans.shares"),
    ({"share": 0.5, "seed": -1}, "incorporation", "stages.incorporation.humans.seed"),
    ("all", "incorporation", "stages.incorporation.humans"),
    ({"share": 0.5}, "relevance", "stages.relevance.humans"),
])
def test_a_bad_humans_block_is_exit_2_naming_the_key(tmp_path: Path, humans: Any, stage: str, where: str) -> None:
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    d = _write(tmp_path / "s", _edit(study_yaml(), lambda c: c["stages"][stage].update(humans=humans)))
    for verb in ("plan", "run"):
        res = CliRunner().invoke(app, ["study", verb, str(d)])
        assert res.exit_code == 2, (verb, res.output)
        assert f"study.yaml: {where}:" in res.output and "Traceback" not in res.output
    assert sorted(p.name for p in d.iterdir()) == ["study.yaml"]


def test_humans_needs_a_judge(tmp_path: Path) -> None:
    from tailorbench.errors import ConfigError

    def change(c: dict[str, Any]) -> None:
        c["stages"]["incorporation"].update(humans={"share": 0.5}, judges=False)

    d = _write(tmp_path / "s", _edit(study_yaml(), change))
    with pytest.raises(ConfigError) as err:
        load_config(d)
    assert "study.yaml: stages.incorporation.humans: the anchored estimate" in str(err.value)
