"""The reliability table (docs/metrics.md, "Reliability"): every figure recomputed from predictions.jsonl by an
independent, plain implementation (Python loops, sklearn's Brier score) equals results.json's; the ECE against
hand-worked cases of its definition."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss

from tailorbench import api
from tailorbench.bootstrap import bootstrap_ci, seed_for
from tailorbench.evaluate.reliability import expected_calibration_error, probability_a


def test_ece_by_hand() -> None:
    # ten verdicts: ten bins of one; ECE is the mean of |right - confidence|
    conf = np.array([0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0])
    right = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], float)
    assert expected_calibration_error(conf, right)[0] == pytest.approx(np.mean(np.abs(right - conf)), abs=1e-12)
    # twenty verdicts, two per bin: bin 1 holds 0.5 and 0.6 (both right): |1 - 0.55| = 0.45, and so on
    conf20 = np.repeat(np.linspace(0.5, 0.95, 10), 2) + np.tile([0.0, 0.01], 10)
    right20 = np.tile([1.0, 0.0], 10)
    by_hand = sum(2 / 20 * abs(0.5 - (conf20[2 * b] + conf20[2 * b + 1]) / 2) for b in range(10))
    assert expected_calibration_error(conf20, right20)[0] == pytest.approx(by_hand, abs=1e-12)
    # perfectly calibrated in every bin (ties keep their order, two per bin): 0
    assert expected_calibration_error(np.full(20, 0.5), np.array([1, 0] * 10, float))[0] == pytest.approx(0.0)


def test_probability_rules() -> None:
    assert probability_a({"A": math.log(0.3), "B": math.log(0.1)}, "softmax") == pytest.approx(0.75)
    assert probability_a({"A": 2.0, "B": 0.0}, "logistic") == pytest.approx(1 / (1 + math.exp(-2)))
    assert probability_a({"A": 0.9, "B": 0.2}, "margin") == pytest.approx(0.85)
    assert probability_a({"A": 0.9}, "margin") is None and probability_a(None, "softmax") is None


def _independent(rows: list[dict[str, Any]], rule: str | None) -> dict[str, Any]:
    """The overall cell, the slow and obvious way."""
    by_case: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_case[r["case_id"]].append(r)
    valid = lambda r: r["status"] == "ok" and r["choice"] is not None  # noqa: E731
    pairs = [v for v in by_case.values() if len(v) == 2 and all(valid(r) for r in v)]
    flips = sum(1 for v in pairs if v[0]["correct"] != v[1]["correct"])
    first, longer = [], []
    for v in by_case.values():
        ok = [r for r in v if valid(r)]
        if ok:
            first.append(sum(r["choice"] == "A" for r in ok) / len(ok))
        unequal = [r for r in ok if r["len_chosen"] != r["len_rejected"]]
        if unequal:
            longer.append(sum((r["len_chosen"] > r["len_rejected"]) == r["correct"] for r in unequal) / len(unequal))
    acc = {c: sum(r["correct"] for r in v) / len(v) for c, v in by_case.items()}
    sign = {c: v[0]["len_chosen"] - v[0]["len_rejected"] for c, v in by_case.items()}
    out: dict[str, Any] = {
        "flip_rate": flips / len(pairs) if pairs else None, "p_first": float(np.mean(first)),
        "p_longer": float(np.mean(longer)), "first_values": first, "longer_values": longer,
        "longer_right": float(np.mean([acc[c] for c in acc if sign[c] > 0])),
        "shorter_right": float(np.mean([acc[c] for c in acc if sign[c] < 0])),
        "invalid": sum(r["status"] == "invalid" for r in rows) / len(rows),
    }
    if rule is not None:
        p = []
        for r in rows:
            if valid(r) and r["scores"]:
                pa = probability_a(r["scores"], rule)
                assert pa is not None
                p.append(pa if r["order"] == "AB" else 1 - pa)
        p_arr = np.array(p)
        conf = np.maximum(p_arr, 1 - p_arr)
        right = (p_arr > 0.5).astype(float)
        order = np.argsort(conf, kind="stable")
        n = len(order)
        ece = 0.0
        for b in range(10):  # bin of item i: floor(10 (i + 1/2) / n)
            members = [order[i] for i in range(n) if min(9, math.floor(10 * (i + 0.5) / n)) == b]
            if members:
                ece += len(members) / n * abs(right[members].mean() - conf[members].mean())
        out["ece"] = ece
        out["brier"] = brier_score_loss(np.ones(len(p_arr)), p_arr)
    return out


@pytest.mark.parametrize("judge", ["longer", "embedding", "first"])
def test_every_figure_recomputed_from_predictions(tmp_path: Path, judge: str) -> None:
    result = api.eval("demo", judge=judge, out=tmp_path / "run", n_boot=200, seed=3)
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    rule = {"embedding": "margin"}.get(judge)
    assert result.reliability["probability"] == rule
    cell = result.reliability["cells"]["all"]
    want = _independent(rows, rule)
    assert cell["position"]["flip_rate"] == pytest.approx(want["flip_rate"])
    assert cell["position"]["p_first"]["value"] == pytest.approx(want["p_first"])
    assert cell["length"]["p_longer"]["value"] == pytest.approx(want["p_longer"])
    assert cell["length"]["longer_is_right"]["accuracy"] == pytest.approx(want["longer_right"])
    assert cell["length"]["shorter_is_right"]["accuracy"] == pytest.approx(want["shorter_right"])
    assert cell["shares"]["invalid"] == pytest.approx(want["invalid"])
    # the intervals: the case-level bootstrap of the independently computed per-case values, same seed
    ci = bootstrap_ci(np.array(want["first_values"]), None, 200, seed_for(3, "p_first/all"))
    assert cell["position"]["p_first"]["ci"] == pytest.approx(list(ci))
    ci = bootstrap_ci(np.array(want["longer_values"]), None, 200, seed_for(3, "p_longer/all"))
    assert cell["length"]["p_longer"]["ci"] == pytest.approx(list(ci))
    if rule is None:
        assert cell["calibration"] is None
    else:
        assert cell["calibration"]["ece"] == pytest.approx(want["ece"], abs=1e-12)
        assert cell["calibration"]["brier"] == pytest.approx(want["brier"], abs=1e-12)
        lo, hi = cell["calibration"]["ece_ci"]
        assert lo <= hi and sum(b["n"] for b in cell["calibration"]["bins"]) == cell["calibration"]["n"]
    if judge == "first":
        assert cell["position"]["p_first"]["value"] == 1.0 and cell["position"]["flip_rate"] == 1.0
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "## Reliability" in report and "P(first shown)" in report


def test_calibration_asked_of_a_judge_without_probabilities_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "longer", "--calibration", "--limit", "3",
                                      "--no-progress", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "--calibration: judge 'longer' yields no probability" in result.output
    assert not out.exists()
    ok = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "embedding", "--calibration", "--limit", "3",
                                  "--no-progress", "--json", "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["reliability"]["cells"]["all"]["calibration"]["ece"] is not None
