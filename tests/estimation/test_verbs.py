"""`tailor estimate` end to end on real demo runs: a sampling plan as an annotation import, estimates from the
benchmark's own labels, a ratings file and an annotation-export-like folder, the --assume-uniform rule, the typed
and versioned output read back by its model, the plan verb, and clean exit-2 errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.estimation.cells import three_estimates
from tailorbench.estimation.items import read_items
from tailorbench.estimation.records import EstimateReport, PlanReport

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("estimate_runs")
    for judge in ("longer", "random", "shorter"):
        api.eval("demo", judge=judge, out=root / judge, n_boot=20)
    return {j: root / j for j in ("longer", "random", "shorter")}


def _cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _plan(tmp_path: Path, sampling: str = "stratified", *extra: str) -> Path:
    plan = tmp_path / f"{sampling}.jsonl"
    code, _, err = _cli("estimate", "sample", "--data", "demo", "--sampling", sampling, "--share", "0.5",
                        "--out", str(plan), "--seed", "3", "--json", *extra)
    assert code == 0, err
    return plan


def test_sample_is_an_annotation_import_with_inclusion_probabilities(tmp_path: Path) -> None:
    from tailorbench.annotation.importer import read_import

    plan = _plan(tmp_path)
    fmt, items = read_import(plan, "pairwise")
    assert fmt == "paircase" and len(items) == 36
    entry = items[0].payload["meta"]["estimate_plan"]
    assert entry["sampling"] == "stratified" and entry["inclusion_probability"] == pytest.approx(0.5)
    assert items[0].payload["meta"]["source_chosen"] == "A"
    again = tmp_path / "again.jsonl"
    assert _cli("estimate", "sample", "--data", "demo", "--share", "0.5", "--seed", "3", "--out", str(again))[0] == 0
    assert again.read_bytes() == plan.read_bytes()


def test_estimate_from_the_benchmark_labels_equals_the_core(tmp_path: Path, runs: dict[str, Path]) -> None:
    plan = _plan(tmp_path)
    out = tmp_path / "estimate.json"
    code, stdout, err = _cli("estimate", str(runs["longer"]), "--proxy", str(runs["shorter"]), "--labels",
                             "benchmark", "--sample", str(plan), "--out", str(out), "--json")
    assert code == 0, err
    printed = json.loads(stdout)
    report = EstimateReport.read(out)
    assert isinstance(report, EstimateReport)
    assert report.model_dump(mode="json") == printed
    assert report.format_version == 1 and report.design == "stratified" and not report.assumed_uniform
    assert [c.cell for c in report.cells][-1] == "all"
    assert len(report.cells) == 9  # 2 splits x (3 tiers + all) + all
    # the `all` cell recomputed from the core with the same inputs
    items = read_items(runs["longer"], runs["shorter"])
    sampled = {json.loads(line)["id"] for line in plan.read_text().splitlines()}
    labeled = np.array([c in sampled for c in items.ids])
    y = items.human_value(np.ones(len(items.ids)))
    strata = np.array([f"{s}/{t}" for s, t in zip(items.split, items.tier)], dtype=object)
    core = three_estimates(y, items.yhat, labeled, np.full(len(y), 0.5), "stratified", strata)
    cell = report.cells[-1]
    assert core.anchored is not None and cell.anchored is not None
    assert cell.anchored.estimate == pytest.approx(core.anchored.estimate, abs=1e-12)
    # with every label revealed the human-only estimate is the run's accuracy on the sampled cases
    assert cell.human_only is not None
    assert cell.human_only.estimate == pytest.approx(float(y[labeled].mean()), abs=1e-12)


def test_labels_without_a_plan_need_assume_uniform(tmp_path: Path, runs: dict[str, Path]) -> None:
    ratings = tmp_path / "ratings.jsonl"
    items = read_items(runs["longer"], runs["random"])
    rng = np.random.default_rng(0)
    rows = []
    for case in rng.choice(items.ids, size=30, replace=False):
        for rater in ("ann", "bob", "cy"):
            rows.append({"item": str(case), "rater": rater, "label": "A" if rng.random() < 0.8 else "B"})
    rows.append({"item": "not-a-case", "rater": "ann", "label": "A"})
    ratings.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = _cli("estimate", str(runs["longer"]), "--proxy", str(runs["random"]), "--labels", str(ratings))
    assert code == 2 and err.startswith("error:") and "--assume-uniform" in err
    code, stdout, err = _cli("estimate", str(runs["longer"]), "--proxy", str(runs["random"]), "--labels",
                             str(ratings), "--assume-uniform", "--json")
    assert code == 0, err
    result = json.loads(stdout)
    assert result["assumed_uniform"] and result["n_labels"] == 30
    assert any("--assume-uniform" in n for n in result["notes"])
    assert any("not cases of the runs" in n for n in result["notes"])
    assert any("raters per labelled item: 3-3" in n for n in result["notes"])


def test_export_folder_carries_the_plan(tmp_path: Path, runs: dict[str, Path]) -> None:
    """An annotation export: items.jsonl (the imported payloads, meta kept) and ratings.jsonl."""
    plan = _plan(tmp_path, "uniform")
    export = tmp_path / "export"
    export.mkdir()
    items, ratings = [], []
    for line in plan.read_text().splitlines():
        case = json.loads(line)
        items.append({"id": case["id"], "answer_a": case["chosen"], "answer_b": case["rejected"],
                      "meta": {**case["meta"], "source_chosen": "A"}})
        ratings.append({"item": case["id"], "rater": "ann", "label": "A", "group": "human"})
        ratings.append({"item": case["id"], "rater": "judge", "label": "B", "group": "model"})
    (export / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    (export / "ratings.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ratings))
    result = api.estimate(runs["longer"], runs["shorter"], export, check_library=True)
    assert result.design == "uniform" and not result.assumed_uniform and result.n_labels == 36
    assert any("outside the human group" in n for n in result.notes)
    library = result.to_dict()["library_check"]
    assert library is not None and library < 1e-9


def test_active_plan_without_scores_falls_back_to_stratified(tmp_path: Path, runs: dict[str, Path]) -> None:
    code, stdout, err = _cli("estimate", "sample", "--data", "demo", "--sampling", "active", "--size", "20",
                             "--proxy", str(runs["longer"]), "--out", str(tmp_path / "a.jsonl"), "--json")
    assert code == 0, err
    result = json.loads(stdout)
    assert result["sampling"] == "stratified" and result["requested"] == "active"
    assert "no scores" in result["notes"][0]


def test_plan_verb(tmp_path: Path, runs: dict[str, Path]) -> None:
    items = read_items(runs["longer"], runs["shorter"])
    ratings = tmp_path / "pilot.csv"
    ratings.write_text("item,rater,label,group\n" + "".join(f"{c},ann,A,human\n" for c in items.ids[:40]))
    out = tmp_path / "plan.json"
    code, stdout, err = _cli("estimate", "plan", str(runs["longer"]), "--proxy", str(runs["random"]), "--labels",
                             str(ratings), "--half-width", "0.2", "--cases", "2000", "--draws", "200", "--json",
                             "--out", str(out))
    assert code == 0, err
    plan = PlanReport.read(out)
    assert isinstance(plan, PlanReport) and plan.pilot_items == 40 and plan.items == 2000
    assert {r.estimate for r in plan.rows} == {"human-only", "anchored"}
    assert json.loads(stdout) == plan.model_dump(mode="json")


@pytest.mark.parametrize("args", [
    ["estimate", "nowhere"],
    ["estimate", "{longer}"],
    ["estimate", "{longer}", "--proxy", "{random}", "--labels", "benchmark"],
    ["estimate", "{longer}", "--proxy", "{random}", "--labels", "missing.jsonl", "--assume-uniform"],
    ["estimate", "{longer}", "--proxy", "{random}", "--level", "1.5", "--assume-uniform"],
    ["estimate", "sample", "--data", "demo", "--out", "{tmp}/x.jsonl"],
    ["estimate", "sample", "--data", "demo", "--size", "5", "--share", "0.1", "--out", "{tmp}/x.jsonl"],
    ["estimate", "sample", "--data", "demo", "--size", "500", "--out", "{tmp}/x.jsonl"],
    ["estimate", "sample", "--data", "demo", "--size", "5", "--sampling", "clever", "--out", "{tmp}/x.jsonl"],
    ["estimate", "sample", "--data", "demo", "--size", "5", "--sampling", "active", "--out", "{tmp}/x.jsonl"],
    ["estimate", "plan", "{longer}", "--proxy", "{random}", "--labels", "benchmark"],
    ["estimate", "plan", "{longer}", "--proxy", "{random}", "--labels", "{tmp}", "--half-width", "0"],
])
def test_bad_input_is_exit_2(tmp_path: Path, runs: dict[str, Path], args: list[str]) -> None:
    filled = [a.format(tmp=tmp_path, **runs) for a in args]
    code, _, err = _cli(*filled)
    assert code == 2, err
    assert err.startswith("error:") or "Usage" in err
    assert not (tmp_path / "x.jsonl").exists()


def test_markdown_page_with_definitions(tmp_path: Path, runs: dict[str, Path]) -> None:
    plan = _plan(tmp_path)
    page = tmp_path / "estimate.md"
    code, _, err = _cli("estimate", str(runs["longer"]), "--proxy", str(runs["shorter"]), "--sample", str(plan),
                        "--out", str(page))
    assert code == 0, err
    text = page.read_text()
    assert text.startswith("# Human-anchored estimate") and "| all | 72 | 36 |" in text
    assert "*proxy-only*" in text and "valid whatever the proxy's bias" in text
