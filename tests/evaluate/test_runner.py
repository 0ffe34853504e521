"""The runner: order assignment, resumability, run directory contents, reproducibility from the run alone."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tailorbench.datasets import load_benchmark
from tailorbench.errors import ConfigError
from tailorbench.evaluate.results import compute_results
from tailorbench.evaluate.runner import EvalConfig, orders_for, plan, run_eval, slug
from tailorbench.evaluate.settings import SettingOptions
from tailorbench.schema import Prediction


def test_plan_assigns_positions_and_hides_labels() -> None:
    cases = load_benchmark("demo").cases[:5]
    tasks = plan(cases, "persona", "both", 0, SettingOptions())
    assert len(tasks) == 10
    for task in tasks:
        chosen_pos = task.input.answer_a if task.order == "AB" else task.input.answer_b
        assert chosen_pos == task.case.chosen
        assert "chosen" not in dataclasses.asdict(task.input)
        assert task.input.context and "Demographics" in task.input.context
    none = plan(cases, "none", "both", 0, SettingOptions())
    assert all(t.input.context is None for t in none)


def test_random_orders_are_seeded_and_mixed() -> None:
    cases = load_benchmark("demo").cases
    first = [orders_for(c, "random", 1) for c in cases]
    assert first == [orders_for(c, "random", 1) for c in cases]
    assert {o for (o,) in first} == {"AB", "BA"}


def test_persona_sections_ablation_reaches_the_judge() -> None:
    cases = load_benchmark("demo").cases[:1]
    tasks = plan(cases, "persona", "both", 0, SettingOptions(["Demographics"]))
    assert tasks[0].input.context is not None
    assert "Demographics" in tasks[0].input.context and "Preference" not in tasks[0].input.context


def test_run_directory_contents_and_reproducibility(tmp_path: Path) -> None:
    out = run_eval(EvalConfig(judge="longer", n_boot=200), tmp_path / "run", progress=False)
    for name in ("manifest.json", "predictions.jsonl", "results.json", "report.md", "report.html"):
        assert (out / name).exists(), name
    lines = (out / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 72
    for line in lines:  # the runner's fast path writes exactly the Prediction contract
        assert Prediction.model_validate_json(line).model_dump(mode="json") == json.loads(line)
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"]["all"]["n"] == 72
    assert results["metrics"]["all"]["accuracy"] == pytest.approx(0.5, abs=0.1)
    assert compute_results(out) == results  # every number comes from the run directory alone
    from tailorbench.evaluate.results import read_predictions

    assert compute_results(out, read_predictions(out)) == results
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "finished" and len(manifest["dataset_fingerprint"]) == 64
    assert manifest["data_stats"]["rows"] == 72


def test_resume_continues_without_repeating(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_eval(EvalConfig(judge="random", n_boot=100, limit=30), run, progress=False)
    full = (run / "predictions.jsonl").read_text().splitlines()
    # simulate a kill -9: keep 17 lines and half of the 18th
    (run / "predictions.jsonl").write_text("\n".join(full[:17]) + "\n" + full[17][:20])
    (run / "results.json").unlink()
    from tailorbench import api

    api.resume(run)
    again = (run / "predictions.jsonl").read_text().splitlines()
    assert len(again) == len(full)
    key = lambda line: (json.loads(line)["case_id"], json.loads(line)["order"])  # noqa: E731
    assert sorted(map(key, again)) == sorted(map(key, full))
    assert json.loads((run / "manifest.json").read_text())["config"]["resumed_with_done"] == 17


def test_refuses_to_overwrite_a_run(tmp_path: Path) -> None:
    run_eval(EvalConfig(n_boot=100, limit=3), tmp_path / "r", progress=False)
    with pytest.raises(ConfigError, match="--resume"):
        run_eval(EvalConfig(n_boot=100, limit=3), tmp_path / "r", progress=False)


def test_filters_and_empty_selection(tmp_path: Path) -> None:
    out = run_eval(EvalConfig(splits=["specific"], tiers=["mid"], n_boot=100), tmp_path / "f", progress=False)
    results = json.loads((out / "results.json").read_text())
    assert set(results["metrics"]) == {"specific", "all"}
    assert set(results["metrics"]["specific"]) == {"medium", "all"}
    with pytest.raises(ConfigError):
        run_eval(EvalConfig(tiers=["extreme"]), tmp_path / "g", progress=False)


def test_slug() -> None:
    assert slug("llm:openai:gpt-4o@http://h:1/v1") == "llm_openai_gpt-4o_http___h_1_v1"


def test_rows_shared_across_tiers_are_reported(tmp_path: Path) -> None:
    """A row that another tier repeats or contradicts is classified against the whole benchmark (also when the
    run judges a sample) and each tier's accuracy is split by it; data without such rows gets no breakdown."""
    from tailorbench.datasets import Benchmark

    base = load_benchmark("demo").cases[:4]
    easy = [c.model_copy(update={"tier": "easy", "split": "general"}) for c in base]
    hard = [easy[0].model_copy(update={"id": "r", "tier": "hard"}),  # repeated: same label
            easy[1].model_copy(update={"id": "x", "tier": "hard", "chosen": easy[1].rejected,
                                       "rejected": easy[1].chosen})]  # contradicted: labels swapped
    cases = easy + hard
    bench = Benchmark("shared", "memory", cases)
    out = run_eval(EvalConfig(judge="longer", n_boot=50), tmp_path / "run", progress=False, benchmark=bench)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tier_overlap"] == {easy[0].id: "repeated", "r": "repeated", easy[1].id: "contradicted",
                                        "x": "contradicted"}
    results = json.loads((out / "results.json").read_text())
    view = results["metrics"]["general"]["hard"]["by_overlap"]
    longer_wins = [len(c.chosen) > len(c.rejected) for c in cases]
    assert view == {"repeated": {"n": 1, "accuracy": float(longer_wins[4]), "chosen_longer": float(longer_wins[4])},
                    "contradicted": {"n": 1, "accuracy": float(longer_wins[5]),
                                     "chosen_longer": float(longer_wins[5])}}
    assert results["metrics"]["general"]["easy"]["by_overlap"]["unique"]["n"] == 2
    # a pair's two rows: `longer` is right on exactly one
    assert view["contradicted"]["accuracy"] + results["metrics"]["general"]["easy"]["by_overlap"][
        "contradicted"]["accuracy"] == 1.0
    assert "## Rows shared across tiers" in (out / "report.md").read_text()
    assert "Rows shared across tiers" in (out / "report.html").read_text()
    one = run_eval(EvalConfig(judge="longer", n_boot=50, tiers=["hard"]), tmp_path / "hard", progress=False,
                   benchmark=bench)
    assert json.loads((one / "manifest.json").read_text())["tier_overlap"] == {"r": "repeated", "x": "contradicted"}
    plain = run_eval(EvalConfig(judge="longer", n_boot=50), tmp_path / "demo", progress=False)
    metrics = json.loads((plain / "results.json").read_text())["metrics"]
    assert not any("by_overlap" in cell for block in metrics.values() if "n" not in block for cell in block.values())
    assert "Rows shared across tiers" not in (plain / "report.md").read_text()
