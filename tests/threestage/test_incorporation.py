"""Stage 3 metrics: Spearman / Kendall against scipy, inflation, share no better, mention uplift, accounting."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.stats import kendalltau, spearmanr
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.threestage.incorporation.analysis import mentions
from tailorbench.threestage.statistics import correlations, kendall_tau_b, rankdata, spearman
from tests.threestage.helpers import write_jsonl


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(-2, 2), hs.floats(-3, 3, allow_nan=False)), min_size=3, max_size=40))
def test_correlations_match_scipy(pairs: list[tuple[int, float]]) -> None:
    x = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs])
    rho, tau = spearman(x, y), kendall_tau_b(x, y)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_rho, ref_tau = spearmanr(x, y)[0], kendalltau(x, y)[0]
    if np.isnan(ref_rho):
        assert np.isnan(rho) and np.isnan(tau)
    else:
        assert rho == pytest.approx(ref_rho, abs=1e-9) and tau == pytest.approx(ref_tau, abs=1e-9)


def test_rankdata_and_bootstrap_ci_is_seeded() -> None:
    from scipy.stats import rankdata as ref

    x = np.array([3, 1, 3, 2, 2, 2, 5.0])
    assert rankdata(x).tolist() == ref(x).tolist()
    rng = np.random.default_rng(1)
    a = rng.integers(-2, 3, 80).astype(float)
    b = a + rng.normal(0, 1, 80)
    one, two = correlations(a, b, 200, seed=4), correlations(a, b, 200, seed=4)
    assert one == two and one["spearman_ci"][0] < one["spearman"] < one["spearman_ci"][1]
    # the vectorised Kendall bootstrap equals tau-b of each resample computed directly
    from tailorbench.bootstrap import Resampler

    w = next(Resampler(80, 3, seed=4, chunk=3).weights())[0].astype(int)
    idx = np.repeat(np.arange(80), w)
    assert kendall_tau_b(a[idx], b[idx]) == pytest.approx(kendalltau(a[idx], b[idx])[0], abs=1e-9)


def test_mention_detector() -> None:
    assert mentions("Since you keep a vegetarian diet, try lentils.", "The user keeps a vegetarian diet.")
    assert mentions("Great for vegetarians training for races.", "The user keeps a vegetarian diet.")
    assert not mentions("Here is a general plan.", "The user keeps a vegetarian diet.")
    assert not mentions("anything", "The user likes.")


def _study(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, list[int]]]:
    tasks, ratings, human = [], [], {}
    rng = np.random.default_rng(0)
    for i in range(30):
        explicit = i % 2 == 0
        attr = "The user keeps a vegetarian diet." if explicit else "The user is training for a marathon."
        personalized = "As a vegetarian, try this." if explicit else "Try this plan."
        tasks.append({"id": f"t{i}", "user_id": f"u{i % 5}", "prompt": "Plan dinner.", "generic": "Eat food.",
                      "personalized": personalized, "attributes": [attr], "meta": {"condition": "gold"}})
        labels = [int(v) for v in rng.integers(-2, 3, 3)]
        human[f"t{i}::1"] = labels
        for a, lab in zip(("h1", "h2", "h3"), labels):
            ratings.append({"item": f"t{i}::1", "rater": a, "label": lab, "group": "human"})
        ratings.append({"item": f"t{i}::1", "rater": "judge", "label": min(2, labels[0] + 1), "group": "model"})
    ratings.append({"item": "t99::1", "rater": "judge", "label": 1, "group": "model"})  # unknown task
    ratings.append({"item": "t0::1", "rater": "judge2", "label": None, "group": "model"})  # invalid verdict
    scores = [{"item": k, "rater": "rm", "score": float(np.mean(v)) + 0.1 * j}
              for j, (k, v) in enumerate(human.items())]
    return (write_jsonl(tmp_path / "tasks.jsonl", tasks), write_jsonl(tmp_path / "r.jsonl", ratings),
            write_jsonl(tmp_path / "s.jsonl", scores), human)


def test_incorporation_report_against_direct_computation(tmp_path: Path) -> None:
    tasks, ratings, scores, human = _study(tmp_path)
    res = CliRunner().invoke(app, ["stages", "report-incorporation", "--tasks", str(tasks), "--ratings", str(ratings),
                                   "--scores", str(scores), "--json", "--resamples", "100",
                                   "--report", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    keys = sorted(human)
    hmean = np.array([np.mean(human[k]) for k in keys])
    judge = np.array([min(2, human[k][0] + 1) for k in keys], dtype=float)
    h = r["humans"]["per_item_mean"]
    assert h["mean_rating"] == pytest.approx(hmean.mean())
    assert h["share_no_better"] == pytest.approx((hmean <= 0).mean())
    assert h["mean_rating_1to5"] == pytest.approx(hmean.mean() + 3)
    j = r["judges"]["judge"]
    assert j["inflation"] == pytest.approx((judge - hmean).mean()) and j["inflation_n"] == 30
    assert j["n"] == 30  # the rating for an unknown task is counted, not used
    assert r["ratings_for_unknown_items"] == {"judge": 1} and r["missing_ratings"] == {"null label": 1}
    c = r["correlation_with_humans"]
    assert c["judge"]["spearman"] == pytest.approx(spearmanr(judge, hmean)[0])
    assert c["judge"]["kendall"] == pytest.approx(kendalltau(judge, hmean)[0])
    rm = np.array([np.mean(human[k]) + 0.1 * int(k[1:].split("::")[0]) for k in keys])
    assert c["rm"]["spearman"] == pytest.approx(spearmanr(rm, hmean)[0]) and c["rm"]["kind"] == "score"
    mention = np.array([int(k[1:].split("::")[0]) % 2 == 0 for k in keys])
    up = r["humans"]["mention_uplift"]
    assert up["uplift"] == pytest.approx(hmean[mention].mean() - hmean[~mention].mean())
    assert up["n_mention"] == 15
    assert (tmp_path / "rep" / "incorporation.html").read_text().count("<svg") == 1


def test_out_of_range_label_names_the_line(tmp_path: Path) -> None:
    tasks, _, _, _ = _study(tmp_path)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"item": "t0::1", "rater": "h", "label": 5}])
    res = CliRunner().invoke(app, ["stages", "report-incorporation", "--tasks", str(tasks), "--ratings", str(bad)])
    assert res.exit_code == 2 and f"{bad}:1" in res.output and "-2..2" in res.output
