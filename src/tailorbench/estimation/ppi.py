"""The three estimates of a mean that people would give (docs/metrics.md, "Human-anchored estimates"), in numpy.

- human-only: the mean of the human labels Y on the labelled items (inverse-probability weighted when items had
  unequal chances of being labelled), a normal interval;
- proxy-only: the mean of the proxy's labels Ŷ on every item, a normal interval (valid only for the proxy's own
  mean: it says nothing of its bias against people);
- human-anchored (prediction-powered inference, PPI++ with power tuning; Angelopoulos et al. 2023, 2024):
  θ̂ = mean_U(λŶ) + mean_L(Y − λŶ), whose interval is valid whatever the proxy's bias; λ ∈ [0, 1] is chosen from
  the data to minimise the variance (λ = 0 is human-only, λ = 1 is plain PPI).

`ppi_mean`, `classical_mean` and `crossppi_mean` compute exactly what `ppi-python`'s `ppi_mean_ci` /
`ppi_mean_pointestimate`, `classical_mean_ci` and `crossppi_mean_ci` compute (tests/estimate check it to 1e-9);
`stratified_ppi` (a PPI++ estimate per stratum, combined by the strata's shares) and `active_ppi` (the
inverse-probability-weighted estimator of active statistical inference, Zrnic & Candès 2024) are the cases the
library has no arguments for; their check is the coverage simulation of tests/estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = ["Interval", "active_classical", "active_ppi", "classical_mean", "crossppi_mean", "ppi_lambda", "ppi_mean",
           "proxy_only", "stratified_classical", "stratified_ppi", "z_value"]


def z_value(alpha: float) -> float:
    """The two-sided normal quantile of a (1 - alpha) interval."""
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


@dataclass(frozen=True)
class Interval:
    """A point estimate, its standard error and its two-sided (1 - alpha) normal interval; `lam` the power-tuning
    parameter used (None for an estimate without one)."""

    estimate: float
    se: float
    lo: float
    hi: float
    lam: float | None = None

    @classmethod
    def normal(cls, estimate: float, se: float, alpha: float, lam: float | None = None) -> Interval:
        half = z_value(alpha) * se
        return cls(float(estimate), float(se), float(estimate - half), float(estimate + half), lam)

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2.0


def _weights(n: int, w: np.ndarray | None) -> np.ndarray:
    """ppi-python's weight convention: None is all ones, else normalised to sum to n."""
    if w is None:
        return np.ones(n)
    w = np.asarray(w, dtype=float)
    return w / w.sum() * n


def ppi_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, w: np.ndarray | None = None,
               w_unlabeled: np.ndarray | None = None) -> float:
    """The power-tuning parameter of PPI++ for a mean, clipped to [0, 1] (ppi-python's `_calc_lam_glm` with the
    identity Hessian): Cov(Y, Ŷ) / ((1 + n/N) Var(Ŷ)). A proxy with no variance gives 0 (human-only)."""
    n, big_n = len(y), len(yhat_unlabeled)
    w, wu = _weights(n, w), _weights(big_n, w_unlabeled)
    first = (wu * yhat_unlabeled).mean() + (w * (y - yhat)).mean()
    grads, grads_hat = w * (y - first), w * (yhat - first)
    grads_hat_unlabeled = wu * (yhat_unlabeled - first)
    cov = 2.0 * np.sum((grads - grads.mean()) * (grads_hat - grads_hat.mean())) / n
    var = float(np.var(np.concatenate([grads_hat, grads_hat_unlabeled]), ddof=1))
    if not var > 0.0:
        return 0.0
    return float(np.clip(cov / (2.0 * (1.0 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, alpha: float = 0.05,
             lam: float | None = None, w: np.ndarray | None = None,
             w_unlabeled: np.ndarray | None = None) -> Interval:
    """The PPI++ estimate of E[Y] from n labelled items (Y, Ŷ) and N unlabelled ones (Ŷ only), power-tuned
    unless `lam` is given: θ̂ = mean(w_U λŶ_U) + mean(w_L (Y − λŶ_L)), se² = Var(w_U λŶ_U)/N + Var(w_L (Y − λŶ_L))/n
    (population variances, as ppi-python's `ppi_mean_ci`)."""
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    n, big_n = len(y), len(yhat_unlabeled)
    if lam is None:
        lam = ppi_lambda(y, yhat, yhat_unlabeled, w, w_unlabeled)
    w, wu = _weights(n, w), _weights(big_n, w_unlabeled)
    imputed, rectifier = wu * lam * yhat_unlabeled, w * (y - lam * yhat)
    estimate = imputed.mean() + rectifier.mean()
    se = math.sqrt(imputed.std() ** 2 / big_n + rectifier.std() ** 2 / n)
    return Interval.normal(estimate, se, alpha, float(lam))


def classical_mean(y: np.ndarray, alpha: float = 0.05, w: np.ndarray | None = None) -> Interval:
    """The human-only estimate: mean(w Y) with the normal interval of ppi-python's `classical_mean_ci`."""
    y = np.asarray(y, dtype=float)
    values = _weights(len(y), w) * y
    return Interval.normal(values.mean(), values.std() / math.sqrt(len(y)), alpha)


def proxy_only(yhat: np.ndarray, alpha: float = 0.05) -> Interval:
    """The proxy-only estimate: the mean of Ŷ over every item, as if the proxy were people (its interval covers
    the proxy's own mean, not people's)."""
    return classical_mean(yhat, alpha)


def crossppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, alpha: float = 0.05) -> Interval:
    """Cross-prediction-powered inference (ppi-python's `crossppi_mean_ci`): for a proxy fitted on the same
    people's labels by K-fold cross-fitting, `yhat` holds each labelled item's out-of-fold prediction and
    `yhat_unlabeled` (N, K) every fold model's prediction on the unlabelled items."""
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    if yhat_unlabeled.ndim != 2:
        raise ValueError("yhat_unlabeled must have shape (N, K): one column per fold model")
    pooled = yhat_unlabeled.mean(axis=1)
    estimate = pooled.mean() + (y - yhat).mean()
    se = math.sqrt(pooled.var() / len(pooled) + (yhat - y).var() / len(y))
    return Interval.normal(estimate, se, alpha, 1.0)


def _combine(parts: Sequence[tuple[float, Interval]], alpha: float) -> Interval:
    estimate = sum(share * part.estimate for share, part in parts)
    se = math.sqrt(sum((share * part.se) ** 2 for share, part in parts))
    lams = {part.lam for _, part in parts}
    return Interval.normal(estimate, se, alpha, lams.pop() if len(lams) == 1 else None)


def stratified_ppi(y: np.ndarray, yhat: np.ndarray, labeled: np.ndarray, strata: np.ndarray,
                   alpha: float = 0.05) -> Interval:
    """PPI++ under stratified sampling: over every item of a cell (`yhat` for all, `y` read where `labeled`), a
    PPI++ estimate per stratum (its labelled items against its unlabelled ones, its own λ) combined with weights
    N_h / N; se² = Σ (N_h/N)² se_h². A stratum whose items are all labelled is its human mean. Every stratum
    needs two labelled items (ValueError otherwise)."""
    parts = []
    total = len(yhat)
    for stratum in _unique(strata):
        inside = strata == stratum
        lab, unl = inside & labeled, inside & ~labeled
        if lab.sum() < 2:
            raise ValueError(f"stratum {stratum}: {int(lab.sum())} human label(s); an estimate needs 2")
        part = ppi_mean(y[lab], yhat[lab], yhat[unl], alpha) if unl.any() else classical_mean(y[lab], alpha)
        parts.append((inside.sum() / total, part))
    return _combine(parts, alpha)


def stratified_classical(y: np.ndarray, labeled: np.ndarray, strata: np.ndarray, alpha: float = 0.05) -> Interval:
    """Human-only under stratified sampling: the strata's human means combined with weights N_h / N."""
    parts = []
    total = len(strata)
    for stratum in _unique(strata):
        inside = strata == stratum
        lab = inside & labeled
        if lab.sum() < 2:
            raise ValueError(f"stratum {stratum}: {int(lab.sum())} human label(s); an estimate needs 2")
        parts.append((inside.sum() / total, classical_mean(y[lab], alpha)))
    return _combine(parts, alpha)


def _unique(values: np.ndarray) -> list[object]:
    return sorted(set(values.tolist()), key=str)


def _solve_control(a: np.ndarray, c1: np.ndarray, b: np.ndarray, lam: float | None) -> tuple[float, float]:
    """(offset, λ) minimising the sample variance of a + offset c1 + λ b, λ clipped to [0, 1] (or given)."""
    def cov(u: np.ndarray, v: np.ndarray) -> float:
        return float(np.mean((u - u.mean()) * (v - v.mean())))

    v11, v12, v22 = cov(c1, c1), cov(c1, b), cov(b, b)
    r1, r2 = cov(a, c1), cov(a, b)
    if lam is None:
        det = v11 * v22 - v12 * v12
        lam = float(np.clip((v12 * r1 - v11 * r2) / det, 0.0, 1.0)) if det > 1e-15 * max(v11 * v22, 1e-300) \
            else (float(np.clip(-r2 / v22, 0.0, 1.0)) if v22 > 0 else 0.0)
    offset = -(r1 + lam * v12) / v11 if v11 > 0 else 0.0
    return float(offset), float(lam)


def active_ppi(y: np.ndarray, yhat: np.ndarray, labeled: np.ndarray, pi: np.ndarray, alpha: float = 0.05,
               lam: float | None = None) -> Interval:
    """Active statistical inference (Zrnic & Candès 2024): item i was labelled with probability π_i (ξ_i = 1)
    independently of the others. With the control f_i = c + λŶ_i, Z_i = f_i + (Y_i − f_i) ξ_i / π_i is unbiased
    for Y_i whatever the proxy, so θ̂ = mean(Z) and se = sd(Z) / √N over every item of the cell; c and λ
    (clipped to [0, 1]) minimise the sample variance of Z (λ = 0: the human-only estimate, `active_classical`).
    `y` is read only where `labeled`."""
    labeled = np.asarray(labeled, dtype=bool)
    yhat = np.asarray(yhat, dtype=float)
    scale = np.where(labeled, 1.0 / np.asarray(pi, dtype=float), 0.0)
    a = np.where(labeled, np.asarray(y, dtype=float), 0.0) * scale
    c1 = 1.0 - scale
    b = yhat * c1
    offset, lam = _solve_control(a, c1, b, lam)
    z = a + offset * c1 + lam * b
    return Interval.normal(z.mean(), z.std(ddof=1) / math.sqrt(len(z)), alpha, lam)


def active_classical(y: np.ndarray, labeled: np.ndarray, pi: np.ndarray, alpha: float = 0.05) -> Interval:
    """Human-only under unequal inclusion probabilities: `active_ppi` with λ = 0 (the control a constant)."""
    return active_ppi(y, np.zeros(len(labeled)), labeled, pi, alpha, lam=0.0)
