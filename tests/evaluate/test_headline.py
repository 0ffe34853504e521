"""Reports open with a headline generated from their figures (docs/metrics.md, "Headline"): the eval report's
best judge, paired difference with the `longer` baseline and figures below chance; `tailor compare`'s
significance after Holm's correction. Every number of a headline is found in the rest of the report, the paired
bootstrap is recomputed with numpy from the predictions and the same seed, Holm against statsmodels."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.bootstrap import seed_for
from tailorbench.cli.app import app
from tailorbench.evaluate.compare import ALPHA, compare_headline
from tailorbench.evaluate.headline import VS_LONGER_SEED
from tailorbench.run_kinds import RUN_KINDS

NUMBER = re.compile(r"\d+(?:\.\d+)?")
N_BOOT = 150


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("headline")
    out = {}
    for judge, setting in (("longer", "persona"), ("random", "persona"), ("embedding", "none")):
        out[judge] = root / judge
        api.eval("demo", judge=judge, setting=setting, out=out[judge], n_boot=N_BOOT)
    return out


def _headline_and_rest(report: str) -> tuple[str, str]:
    """The headline's sentences (before its table) and everything after them."""
    start = report.index("## Headline\n")
    body = report[start + len("## Headline\n"):]
    cut = body.index("\n| ")
    return body[:cut], body[cut:]


def _reference(run: Path, n_boot: int, seed: int) -> tuple[float, list[float]]:
    """The run's accuracy minus the `longer` baseline's, paired by case, recomputed from predictions.jsonl."""
    by_case: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (run / "predictions.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_case[row["case_id"]].append(row)
    ids = sorted(by_case)
    score = np.array([np.mean([r["correct"] for r in by_case[c]]) for c in ids])
    baseline = np.array([float(by_case[c][0]["len_chosen"] > by_case[c][0]["len_rejected"]) for c in ids])
    diff = score - baseline
    rng = np.random.default_rng(seed_for(seed, VS_LONGER_SEED))
    boots = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(axis=1)
    return float(diff.mean()), [float(q) for q in np.quantile(boots, [0.025, 0.975])]


def test_eval_report_opens_with_its_headline(runs: dict[str, Path], tmp_path: Path) -> None:
    RUN_KINDS.get("pairwise").merge(list(runs.values()), tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert report.splitlines()[2] == "## Headline"
    headline, rest = _headline_and_rest(report)
    assert "Best judge: `longer / persona`" in headline
    assert "below `longer`: `embedding / none`" in headline  # 29% against 50% on the same cases
    assert "overall accuracy below chance (50%): `embedding / none`" in headline
    numbers = NUMBER.findall(headline)
    assert len(numbers) > 10
    missing = [n for n in numbers if n not in rest]
    assert not missing, (missing, headline)
    html = (tmp_path / "report.html").read_text()
    assert html.index("<h2>Headline</h2>") < html.index("<h2>Data</h2>")


def test_paired_difference_equals_numpy_reference(runs: dict[str, Path]) -> None:
    for judge, run in runs.items():
        block = json.loads((run / "results.json").read_text())["vs_longer"]
        difference, ci = _reference(run, N_BOOT, 0)
        assert block["n_boot"] == N_BOOT and block["n"] == 72
        assert block["difference"] == pytest.approx(difference, abs=1e-12)
        assert block["ci"] == pytest.approx(ci, abs=1e-12)
        if judge == "longer":
            assert block["difference"] == 0.0 and block["ci"] == [0.0, 0.0]


def test_single_run_report_headline(runs: dict[str, Path]) -> None:
    report = (runs["embedding"] / "report.md").read_text()
    headline, rest = _headline_and_rest(report)
    assert "Best judge: `embedding / none`" in headline
    assert all(n in rest for n in NUMBER.findall(headline))


def test_compare_headline_numbers_are_in_its_lines(runs: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["compare", str(runs["longer"]), str(runs["embedding"]), str(runs["random"]),
                                      "--n-boot", "200"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("Headline")
    blank = lines.index("")
    # the first line is the rule (test, family, level); the figures follow, one line per comparison
    headline, rest = "\n".join(lines[1:blank]), "\n".join(lines[blank:])
    assert "longer / persona - embedding / none: overall" in headline
    missing = [n for n in NUMBER.findall(headline) if n not in rest]
    assert not missing, (missing, result.output)


def _comparison(label: str, p: float, difference: float) -> dict[str, Any]:
    cell = {"cell": "all", "n": 50, "difference": difference, "ci": [difference - 0.1, difference + 0.1],
            "mcnemar": {"a_only": 1, "b_only": 2, "discordant": 3, "p": p}}
    return {"a": "A", "b": label, "cells": [cell]}


def test_compare_headline_significance_follows_statsmodels_holm() -> None:
    from tailorbench.evaluate.compare import holm

    ps = [0.01, 0.04, 0.03, 0.2, 0.004]
    comparisons = [_comparison(f"B{k}", p, 0.05 * (k + 1)) for k, p in enumerate(ps)]
    for c, q in zip(comparisons, holm(ps)):
        c["cells"][0]["mcnemar"]["p_holm"] = q
    lines = compare_headline(comparisons)
    reject = multipletests(ps, alpha=ALPHA, method="holm")[0]
    for k, line in enumerate(lines[1:]):
        assert f"A - B{k}:" in line
        assert (": significant" in line) == bool(reject[k]), line
        assert (": not significant" in line) == (not reject[k]), line


def test_eval_headline_of_results_without_vs_longer(runs: dict[str, Path]) -> None:
    from tailorbench.evaluate.report import render_markdown
    from tailorbench.evaluate.results import load_results

    old = [{k: v for k, v in load_results(run).items() if k != "vs_longer"} for run in runs.values()]
    headline, rest = _headline_and_rest(render_markdown(old, "old runs") + "\n| end")
    assert "No paired difference with the `longer` baseline for `random / persona`, `embedding / none`" in headline
    assert all(n in rest for n in NUMBER.findall(headline))


def test_suite_headline_numbers_are_in_its_table() -> None:
    from tailorbench.benchmarks.suite import leaderboard_table, suite_headline
    from tailorbench.reporting import md_table

    board = {"benchmarks": ["pf", "mc", "prism"], "missing": {"prism": "no data"},
             "not_run": {"first · mc": {"mc": "not an llm"}},
             "rows": {"first · persona": {"pf": {"accuracy": 0.61234, "ci": [0.55, 0.67], "n": 90}},
                      "longer · persona": {"pf": {"accuracy": 0.7251, "ci": [0.681, 0.77], "n": 90}},
                      "llm · mc": {"mc": {"accuracy": 0.4, "ci": [0.3, 0.52], "n": 40}},
                      "first · mc": {"mc": None}}}
    lines = suite_headline(board)
    assert lines == ["pf: best longer · persona, 72.5 [68.1, 77.0] (95% CI).",
                     "mc: best llm · mc, 40.0 [30.0, 52.0] (95% CI).", "prism: no figure (no data)."]
    header, rows, _ = leaderboard_table(board)
    table = md_table(header, rows)
    figures = [line.split(":", 1)[1].replace("(95% CI)", "") for line in lines]  # the level: the intro's
    assert all(n in table for line in figures for n in NUMBER.findall(line))
