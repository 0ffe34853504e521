"""MACE (annotate/mace.py, Hovy et al. 2013) checked three ways: one EM step against a hand computation from
the paper's definitions, a simulated study whose known spammers get the lowest competences, and the figures of
crowd-kit's MACE (a reference implementation, run outside this project on the same labels)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tailorbench.annotation import mace


def _hand_step(labels: dict[tuple[str, str], str], theta: dict[str, float], xi: dict[str, dict[str, float]],
               cats: list[str], smoothing: float) -> tuple[dict[str, float], dict[str, dict[str, float]],
                                                           dict[str, dict[str, float]]]:
    """One EM step written out from the model: P(a | t) = θ [a = t] + (1 - θ) ξ(a), uniform prior on t."""
    items = sorted({i for i, _ in labels})
    post = {}
    for i in items:
        g = {t: 1 / len(cats) * math.prod(theta[j] * (a == t) + (1 - theta[j]) * xi[j][a]
                                         for (ii, j), a in labels.items() if ii == i) for t in cats}
        post[i] = {t: g[t] / sum(g.values()) for t in cats}
    kept = {j: 0.0 for j in theta}
    spam = {j: {c: 0.0 for c in cats} for j in theta}
    for (i, j), a in labels.items():
        e_spam = sum(post[i][t] * (1 - theta[j]) * xi[j][a] / (theta[j] * (a == t) + (1 - theta[j]) * xi[j][a])
                     for t in cats)
        kept[j] += 1 - e_spam
        spam[j][a] += e_spam
    n = {j: sum(1 for (_, jj) in labels if jj == j) for j in theta}
    new_theta = {j: (kept[j] + smoothing) / (n[j] + 2 * smoothing) for j in theta}
    new_xi = {j: {c: (spam[j][c] + smoothing) / (sum(spam[j].values()) + len(cats) * smoothing) for c in cats}
              for j in theta}
    return new_theta, new_xi, post


def test_one_em_step_by_hand() -> None:
    """Items x (p: A, q: A) and y (p: A, q: B); θ_p = 0.8, θ_q = 0.6, ξ_p = (0.5, 0.5), ξ_q = (0.3, 0.7). By
    hand: P(T_x = A) = (.9 · .72) / (.9 · .72 + .1 · .12) = 0.324 / 0.330, P(T_y = A) = (.9 · .28) / (.9 · .28
    + .1 · .88) = 0.126 / 0.170."""
    labels = {("x", "p"): "A", ("x", "q"): "A", ("y", "p"): "A", ("y", "q"): "B"}
    theta, xi = {"p": 0.8, "q": 0.6}, {"p": {"A": 0.5, "B": 0.5}, "q": {"A": 0.3, "B": 0.7}}
    want_theta, want_xi, want_post = _hand_step(labels, theta, xi, ["A", "B"], mace.SMOOTHING)
    assert want_post["x"]["A"] == pytest.approx(0.324 / 0.330) and want_post["y"]["A"] == pytest.approx(0.126 / 0.17)
    item, ann = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    lab = np.array([0, 0, 0, 1])
    match = (lab[:, None] == np.arange(2)[None, :]).astype(float)
    got_theta, got_xi, got_post, ll = mace._step(item, ann, match, lab, np.array([0.8, 0.6]),
                                                 np.array([[0.5, 0.5], [0.3, 0.7]]), 2, mace.SMOOTHING)
    assert got_post[:, 0] == pytest.approx([want_post["x"]["A"], want_post["y"]["A"]])
    assert got_theta == pytest.approx([want_theta["p"], want_theta["q"]])
    want = np.array([[want_xi["p"]["A"], want_xi["p"]["B"]], [want_xi["q"]["A"], want_xi["q"]["B"]]])
    assert got_xi == pytest.approx(want)
    assert ll == pytest.approx(math.log(0.330) + math.log(0.170))  # Σ_i log Σ_t prior · Π_j P(a_ij | t)


def _simulated(seed: int) -> tuple[list[tuple[str, str, str]], set[str], set[str]]:
    """150 items of 3 labels, 5 labels each from 8 annotators: 5 who label by the item 85% of the time, 3 who
    answer at random."""
    rng = random.Random(seed)
    good, spammers = {f"good{k}" for k in range(5)}, {f"spam{k}" for k in range(3)}
    cats = ["a", "b", "c"]
    out = []
    for i in range(150):
        truth = rng.choice(cats)
        for rater in rng.sample(sorted(good | spammers), 5):
            label = truth if rater in good and rng.random() < 0.85 else rng.choice(cats)
            out.append((f"i{i}", rater, label))
    return out, good, spammers


@pytest.mark.parametrize("seed", range(3))
def test_known_spammers_get_low_competence(seed: int) -> None:
    triples, good, spammers = _simulated(seed)
    fit = mace.fit_mace(triples)
    assert max(fit.competence[s] for s in spammers) < 0.3 < 0.7 < min(fit.competence[g] for g in good)
    assert fit == mace.fit_mace(triples)  # seeded: the same fit every time


# crowd-kit 1.4.2 (pip install crowd-kit==1.4.2, in a separate environment), on `_simulated(0)` with workers and
# labels renamed w0, w1, ... and l0, l1, ... in order of first appearance:
#   MACE(n_restarts=10, n_iter=50, method="em", random_state=0).fit(df).spamming_[:, 1]  (P(not spamming) = θ)
# (Under the original names crowd-kit's EM gives other figures, of a lower likelihood under its own model: its
# M-step takes the spamming counts in sorted worker/label order while its parameters are in order of first
# appearance, so the two agree only when those orders are the same. Started from crowd-kit's figures, this EM
# climbs back to the fit below.)
CROWDKIT_COMPETENCE = {"good0": 0.8743, "good1": 0.8776, "good2": 0.816, "good3": 0.792, "good4": 0.7557,
                       "spam0": 0.0842, "spam1": 0.0365, "spam2": 0.0003}


def test_matches_crowd_kit() -> None:
    triples, _, _ = _simulated(0)
    fit = mace.fit_mace(triples)
    for rater, theta in CROWDKIT_COMPETENCE.items():
        assert fit.competence[rater] == pytest.approx(theta, abs=0.001)
