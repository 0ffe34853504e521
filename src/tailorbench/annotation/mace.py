"""MACE competence estimates (Hovy, Berg-Kirkpatrick, Vaswani and Hovy 2013, "Learning Whom to Trust with
MACE", NAACL): how far each annotator can be trusted, from the labels alone, over a whole study.

The model: each item i has a true label T_i (uniform prior over the K labels seen). Annotator j, labelling item
i, is spamming with probability 1 - θ_j (S_ij = 1): then their label is drawn from their own spamming
distribution ξ_j over the K labels; otherwise (S_ij = 0) their label is T_i. So

    P(A_ij = a | T_i = t) = θ_j [a = t] + (1 - θ_j) ξ_j(a)

and θ_j is the annotator's competence. The parameters are fitted by EM as in the paper (its EM variant, not the
variational one): the E-step gives each item's posterior over T_i and each label's posterior of having been
spammed, the M-step sets θ_j to the expected share of labels not spammed and ξ_j to the expected spammed labels'
distribution, each with a small smoothing count (MACE's own default for EM, 0.01 divided by the number of
labels, `SMOOTHING` / K) so no parameter reaches 0 or 1. EM finds a local optimum, so it starts `restarts`
times from seeded random parameters and keeps the fit with the highest log-likelihood (MACE: 10 restarts of 50
iterations). An annotator whose labels agree with the others' inferred truth gets θ near 1; one who answers at
random gets θ near 0.

Checked in tests/annotation/test_mace.py against a hand computation of one EM step from these definitions, a
simulated study in which the known spammers get the lowest competences, and the figures of crowd-kit's `MACE`
(crowd-kit 1.4.2, method "em") on the same labels.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

#: pseudo-count added to every expected count of the M-step, divided by the number of labels (MACE's default)
SMOOTHING = 0.01
RESTARTS = 10
ITERATIONS = 50


@dataclass(frozen=True)
class MaceFit:
    """Competence θ per annotator, spamming distribution ξ per annotator (over `labels`), each item's posterior
    over the true label, and the log-likelihood of the fit."""

    competence: dict[Hashable, float]
    spamming: dict[Hashable, dict[Hashable, float]]
    posterior: dict[Hashable, dict[Hashable, float]]
    labels: list[Hashable]
    log_likelihood: float


def _step(item: np.ndarray, ann: np.ndarray, match: np.ndarray, lab: np.ndarray, theta: np.ndarray,
          xi: np.ndarray, n_items: int, smoothing: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One EM iteration: (new θ, new ξ, item posteriors, log-likelihood under the old parameters)."""
    k = xi.shape[1]
    spam_part = (1.0 - theta[ann]) * xi[ann, lab]  # (n,)
    lik = theta[ann][:, None] * match + spam_part[:, None]  # P(a | t) for every annotation and t, (n, K)
    log_lik = np.log(lik)
    log_g = np.stack([np.bincount(item, weights=log_lik[:, c], minlength=n_items) for c in range(k)], axis=1)
    log_g -= np.log(k)  # the uniform prior over the true label
    top = log_g.max(axis=1, keepdims=True)
    norm = top[:, 0] + np.log(np.exp(log_g - top).sum(axis=1))
    post = np.exp(log_g - norm[:, None])  # P(T_i = t | labels), (I, K)
    spammed = (post[item] * (spam_part[:, None] / lik)).sum(axis=1)  # P(S = 1 | labels), (n,)
    n_ann = theta.shape[0]
    spam_total = np.bincount(ann, weights=spammed, minlength=n_ann)
    kept_total = np.bincount(ann, weights=1.0 - spammed, minlength=n_ann)
    new_theta = (kept_total + smoothing) / (kept_total + spam_total + 2 * smoothing)
    spam_counts = np.bincount(ann * k + lab, weights=spammed, minlength=n_ann * k).reshape(n_ann, k)
    new_xi = (spam_counts + smoothing) / (spam_counts.sum(axis=1, keepdims=True) + k * smoothing)
    return new_theta, new_xi, post, float(norm.sum())


def fit_mace(annotations: Sequence[tuple[Hashable, Hashable, Hashable]], restarts: int = RESTARTS,
             iterations: int = ITERATIONS, smoothing: float | None = None, seed: int = 0) -> MaceFit:
    """MACE by EM over `annotations`, (item, annotator, label) triples (labels: any hashable values); the best
    of `restarts` seeded random starts; `smoothing` default SMOOTHING / K. ValueError without annotations."""
    if not annotations:
        raise ValueError("MACE needs at least one annotation")
    items = list(dict.fromkeys(a[0] for a in annotations))
    raters = list(dict.fromkeys(a[1] for a in annotations))
    labels = sorted(dict.fromkeys(a[2] for a in annotations), key=repr)
    item_ix = {v: i for i, v in enumerate(items)}
    rater_ix = {v: i for i, v in enumerate(raters)}
    label_ix = {v: i for i, v in enumerate(labels)}
    item = np.array([item_ix[a[0]] for a in annotations])
    ann = np.array([rater_ix[a[1]] for a in annotations])
    lab = np.array([label_ix[a[2]] for a in annotations])
    k = len(labels)
    smooth = SMOOTHING / k if smoothing is None else smoothing
    match = (lab[:, None] == np.arange(k)[None, :]).astype(float)
    rng = np.random.default_rng(seed)
    best: tuple[float, np.ndarray, np.ndarray, np.ndarray] | None = None
    for _ in range(max(1, restarts)):
        theta = rng.uniform(0.5, 1.0, size=len(raters))  # MACE starts from random parameters
        xi = rng.dirichlet(np.ones(k), size=len(raters))
        for _ in range(max(1, iterations)):
            theta, xi, _post, _ll = _step(item, ann, match, lab, theta, xi, len(items), smooth)
        # the posterior and likelihood of the final parameters
        *_, post, ll = _step(item, ann, match, lab, theta, xi, len(items), smooth)
        if best is None or ll > best[0]:
            best = (ll, theta, xi, post)
    assert best is not None
    ll, theta, xi, post = best
    return MaceFit(
        competence={r: float(theta[j]) for j, r in enumerate(raters)},
        spamming={r: {lbl: float(xi[j, c]) for c, lbl in enumerate(labels)} for j, r in enumerate(raters)},
        posterior={it: {lbl: float(post[i, c]) for c, lbl in enumerate(labels)} for i, it in enumerate(items)},
        labels=labels, log_likelihood=ll)
