"""The length-controlled win rate: numpy IRLS against statsmodels' Logit, and recovery of a known preference
when length is a pure confounder."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from tailorbench.geneval.lcwr import fit_logistic, length_controlled_win_rate


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fit_matches_statsmodels_logit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 400))
    x = np.column_stack([np.ones(n), rng.normal(size=n), rng.normal(size=n) * 3])
    true = np.array([rng.normal(), rng.normal(), rng.normal() / 3])
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ true))).astype(float)
    ours = fit_logistic(x, y)
    theirs = sm.Logit(y, x).fit(disp=0)
    assert ours.converged
    np.testing.assert_allclose(ours.coef, theirs.params, rtol=1e-6, atol=1e-8)


def test_weighted_batch_fit_equals_fits_on_repeated_rows() -> None:
    """Bootstrap weights (counts) must give what a fit on the physically resampled rows gives."""
    rng = np.random.default_rng(7)
    n = 120
    x = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.3 + x[:, 1])))).astype(float)
    counts = rng.multinomial(n, np.full(n, 1 / n), size=3)
    batch = fit_logistic(x, y, counts)
    for row, coef in zip(counts, batch.coef):
        idx = np.repeat(np.arange(n), row)
        np.testing.assert_allclose(coef, sm.Logit(y[idx], x[idx]).fit(disp=0).params, rtol=1e-6)


def _confounded(n_cases: int, preference: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Verdicts (two per case) from a judge that prefers the generated answer with probability `preference`
    at equal length and strongly rewards extra length; the generated answers are mostly much longer."""
    rng = np.random.default_rng(seed)
    diff_case = rng.normal(300, 150, size=n_cases)  # generated minus reference length, in characters
    diff = np.repeat(diff_case, 2)
    logit = np.log(preference / (1 - preference)) + 0.01 * diff
    y = (rng.random(2 * n_cases) < 1 / (1 + np.exp(-logit))).astype(float)
    return diff, y, np.repeat(np.arange(n_cases), 2)


@pytest.mark.parametrize("preference", [0.3, 0.6])
def test_length_control_recovers_a_known_preference(preference: float) -> None:
    diff, y, groups = _confounded(1500, preference, seed=11)
    raw = float(y.mean())
    lc = length_controlled_win_rate(diff, y, groups, n_boot=300, seed=0)
    # the raw rate is dominated by length, far from the true preference; the controlled rate recovers it
    assert raw > 0.8
    assert abs(raw - preference) > 0.25
    assert lc["estimate"] == pytest.approx(preference, abs=0.06)
    lo, hi = lc["ci"]
    assert lo < preference < hi
    assert lc["slope_per_sd"] > 0 and lc["notes"] == []


def test_no_length_difference_reduces_to_the_raw_rate() -> None:
    y = np.array([1, 0, 1, 1, 0, 1, 1, 0], dtype=float)
    lc = length_controlled_win_rate(np.zeros(8), y, np.arange(8) // 2, n_boot=200)
    assert lc["estimate"] == pytest.approx(y.mean())
    assert "as long as its reference" in lc["notes"][0]
    lo, hi = lc["ci"]
    assert lo <= lc["estimate"] <= hi
    constant = length_controlled_win_rate(np.full(8, -40.0), y, np.arange(8) // 2, n_boot=200)
    assert constant["estimate"] is None and "never varies" in constant["notes"][0]


def test_separation_is_reported_not_hidden() -> None:
    """A judge that always prefers the longer answer separates the data: flagged, estimate at its limit."""
    diff = np.array([-50.0, -30.0, -10.0, 20.0, 40.0, 60.0])
    y = (diff > 0).astype(float)
    lc = length_controlled_win_rate(diff, y, np.arange(6), n_boot=50)
    assert lc["notes"] and "converge" in lc["notes"][0]
    assert 0.0 <= lc["estimate"] <= 1.0 and all(0.0 <= v <= 1.0 for v in lc["ci"])


def test_empty_and_seeded() -> None:
    assert length_controlled_win_rate(np.array([]), np.array([]), np.array([]))["estimate"] is None
    diff, y, groups = _confounded(200, 0.5, seed=3)
    a = length_controlled_win_rate(diff, y, groups, n_boot=200, seed=5)
    b = length_controlled_win_rate(diff, y, groups, n_boot=200, seed=5)
    assert a == b
