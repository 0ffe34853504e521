"""The coverage simulation: synthetic items with a known truth, a biased proxy, 2,000 repetitions per design.

Each repetition draws N fresh items (three tiers of different difficulty, a continuous latent), people's labels
Y ~ Bernoulli(p), a proxy Ŷ ~ Bernoulli(q) with q a biased, noisy copy of p; people label a sample under each
design (uniform, stratified by tier, active by the proxy's uncertainty). The human-anchored 95% interval must
cover the truth E[Y] 93-97% of the time; the proxy-only interval, blind to the bias, must not. The truth is
computed by Gauss-Hermite quadrature, not by simulation.
"""

from __future__ import annotations

import numpy as np
import pytest

from tailorbench.estimation.cells import three_estimates
from tailorbench.estimation.sampling import draw

REPS = 2000
N_ITEMS = 1000
N_LABELS = 200
TIER_SHARE = np.array([0.4, 0.35, 0.25])
TIER_SHIFT = np.array([1.2, 0.4, -0.3])
BIAS = 0.8  # the proxy's logit is shifted up: it likes the system more than people do


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _truth() -> float:
    nodes, weights = np.polynomial.hermite_e.hermegauss(120)
    per_tier = [(weights * _sigmoid(shift + nodes)).sum() / np.sqrt(2 * np.pi) for shift in TIER_SHIFT]
    return float(np.dot(TIER_SHARE, per_tier))


def _items(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    tier = rng.choice(3, size=N_ITEMS, p=TIER_SHARE)
    latent = rng.standard_normal(N_ITEMS)
    p = _sigmoid(TIER_SHIFT[tier] + latent)
    q = _sigmoid(BIAS + 0.8 * (TIER_SHIFT[tier] + latent) + 0.5 * rng.standard_normal(N_ITEMS))
    y = (rng.random(N_ITEMS) < p).astype(float)
    yhat = (rng.random(N_ITEMS) < q).astype(float)
    return y, yhat, tier, np.sqrt(q * (1 - q))


@pytest.fixture(scope="module")
def simulation() -> dict[str, dict[str, float]]:
    truth = _truth()
    rng = np.random.default_rng(20240611)
    hits = {d: {"anchored": 0, "human": 0, "proxy": 0, "narrower": 0} for d in ("uniform", "stratified", "active")}
    for _ in range(REPS):
        y, yhat, tier, uncertainty = _items(rng)
        for design in hits:
            sample = draw(design, N_LABELS, rng, strata=tier, uncertainty=uncertainty, size=N_ITEMS)
            cell = three_estimates(y, yhat, sample.labeled, sample.pi, design, tier)
            assert cell.anchored is not None and cell.human_only is not None, cell.note
            hits[design]["anchored"] += cell.anchored.lo <= truth <= cell.anchored.hi
            hits[design]["human"] += cell.human_only.lo <= truth <= cell.human_only.hi
            hits[design]["proxy"] += cell.proxy_only.lo <= truth <= cell.proxy_only.hi
            hits[design]["narrower"] += cell.anchored.se <= cell.human_only.se
    return {d: {k: v / REPS for k, v in h.items()} for d, h in hits.items()}


@pytest.mark.parametrize("design", ["uniform", "stratified", "active"])
def test_anchored_interval_covers(simulation: dict[str, dict[str, float]], design: str) -> None:
    rate = simulation[design]
    assert 0.93 <= rate["anchored"] <= 0.97, rate
    assert 0.93 <= rate["human"] <= 0.97, rate  # the human-only interval is valid too, only wider


@pytest.mark.parametrize("design", ["uniform", "stratified", "active"])
def test_proxy_only_interval_does_not_cover(simulation: dict[str, dict[str, float]], design: str) -> None:
    assert simulation[design]["proxy"] < 0.5, simulation[design]


def test_an_informative_proxy_narrows_the_interval(simulation: dict[str, dict[str, float]]) -> None:
    for design in ("uniform", "stratified", "active"):
        assert simulation[design]["narrower"] > 0.9, simulation[design]
