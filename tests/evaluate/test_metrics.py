"""Metrics against hand counts and reference implementations (scipy's bootstrap)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from tailorbench.bootstrap import bootstrap_ci, paired_difference
from tailorbench.evaluate.metrics import case_scores, compute_metrics


def _pred(case: str, order: str, correct: bool, status: str = "ok", split: str = "general", tier: str = "easy",
          user: str = "u", lc: int = 10, lr: int = 5) -> dict[str, Any]:
    choice = None if status != "ok" else (("A" if order == "AB" else "B") if correct else ("B" if order == "AB"
                                                                                              else "A"))
    return {"case_id": case, "order": order, "correct": correct and status == "ok", "status": status,
            "choice": choice, "split": split, "tier": tier, "user_id": user, "len_chosen": lc, "len_rejected": lr}


def test_scoring_rule_strict_consistency_and_counts() -> None:
    preds = [
        _pred("a", "AB", True), _pred("a", "BA", True),  # right twice
        _pred("b", "AB", True), _pred("b", "BA", False),  # position-inconsistent: 0.5
        _pred("c", "AB", False, status="invalid"), _pred("c", "BA", True),  # invalid counts as 0
        _pred("d", "AB", False, status="abstain"), _pred("d", "BA", False, status="failed"),
        _pred("e", "AB", False), _pred("e", "BA", False),  # consistently wrong
    ]
    cell = compute_metrics(preds, n_boot=200)["metrics"]["general"]["easy"]
    assert cell["n"] == 5
    assert cell["accuracy"] == pytest.approx((1 + 0.5 + 0.5 + 0 + 0) / 5)
    assert cell["correct"] == pytest.approx(2.0)
    assert (cell["invalid"], cell["abstained"], cell["failed"]) == (1, 1, 1)
    assert cell["strict_accuracy"] == pytest.approx(1 / 5)
    assert cell["n_consistency"] == 3  # a, b, e have two valid verdicts
    assert cell["consistency"] == pytest.approx(2 / 3)


def test_split_average_is_weighted_by_case_counts() -> None:
    preds = [_pred(f"e{i}", "AB", True, tier="easy") for i in range(3)]
    preds += [_pred("h0", "AB", False, tier="hard")]
    m = compute_metrics(preds, n_boot=100)["metrics"]
    assert m["general"]["all"]["accuracy"] == pytest.approx(3 / 4)
    assert m["all"]["accuracy"] == pytest.approx(3 / 4)
    assert "specific" not in m


def test_length_controlled_view() -> None:
    preds = [_pred("l1", "AB", True, lc=10, lr=5), _pred("l2", "AB", True, lc=10, lr=5),
             _pred("s1", "AB", False, lc=3, lr=5), _pred("eq", "AB", True, lc=5, lr=5)]
    view = compute_metrics(preds, n_boot=100)["metrics"]["all"]["length"]
    assert view["chosen_longer"] == {"n": 2, "accuracy": 1.0}
    assert view["chosen_shorter"] == {"n": 1, "accuracy": 0.0}
    assert view["equal_length"] == 1
    assert view["balanced_accuracy"] == pytest.approx(0.5)


@pytest.mark.parametrize("seed", [1, 2])
def test_case_bootstrap_matches_scipy_percentile(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 0.5, 1.0], size=300, p=[0.3, 0.2, 0.5])
    ours = bootstrap_ci(values, n_boot=5000, seed=seed)
    ref = stats.bootstrap((values,), np.mean, n_resamples=5000, method="percentile", random_state=seed,
                          confidence_level=0.95).confidence_interval
    se = values.std() / np.sqrt(len(values))
    assert abs(ours[0] - ref.low) < 0.25 * se
    assert abs(ours[1] - ref.high) < 0.25 * se


def test_user_bootstrap_is_wider_when_cases_cluster_by_user() -> None:
    users = np.repeat(np.arange(20), 15)
    per_user = np.random.default_rng(0).random(20) > 0.5
    values = per_user[users].astype(float)  # every case of a user has the same score
    case_ci = bootstrap_ci(values, n_boot=2000, seed=0)
    user_ci = bootstrap_ci(values, users, n_boot=2000, seed=0)
    assert (user_ci[1] - user_ci[0]) > 2 * (case_ci[1] - case_ci[0])


def test_bootstrap_is_seeded() -> None:
    values = np.linspace(0, 1, 50)
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)


def test_paired_difference() -> None:
    a = {str(i): 1.0 for i in range(100)}
    b = {str(i): float(i % 2) for i in range(100)}
    b["extra"] = 1.0
    res = paired_difference(a, b, seed=0)
    assert res["n"] == 100 and res["difference"] == pytest.approx(0.5)
    assert res["ci"][0] > 0.3 and res["p_two_sided"] < 0.01


def test_case_scores_groups_orders() -> None:
    cs = case_scores([_pred("x", "AB", True), _pred("x", "BA", False)])
    assert cs.ids == ["x"] and cs.score.tolist() == [0.5]
