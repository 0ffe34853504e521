"""Length-controlled win rate: a logistic model of the verdict on the length difference, read at equal length.

Model (one row per valid verdict; see docs/generation.md):

    logit P(judge prefers the generated answer) = b0 + b1 * z,   z = (len(generated) - len(reference)) / s

with `s` the standard deviation of the length difference over the fitted rows (only for conditioning; the
reading does not depend on it). The length-controlled win rate is sigmoid(b0): the modelled win rate of an
answer exactly as long as its reference. Fitted by Newton-Raphson (IRLS) in numpy, many bootstrap resamples at
once (a batch of weight vectors), so a CI costs one vectorised fit instead of a thousand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: linear predictors are clipped here: under separation the fit drifts to +-inf; the clip keeps the
#: probabilities at their limits (0 or 1) instead of overflowing
_ETA_CLIP = 30.0


@dataclass
class LogitFit:
    """Coefficients of a weighted logistic regression, and whether Newton converged."""

    coef: np.ndarray  # (k,) or (B, k)
    converged: bool
    iterations: int


def _sigmoid(eta: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(eta, -_ETA_CLIP, _ETA_CLIP)))


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-10,
    ridge: float = 0.0,
) -> LogitFit:
    """Maximum-likelihood logistic regression by Newton-Raphson (= IRLS).

    `x` is the (n, k) design (include a column of ones for an intercept); `y` holds outcomes in [0, 1]
    (fractions allowed: a tie counts half); `weights` is (n,) or a batch (B, n) of case weights (bootstrap
    counts), fitted all at once. `ridge` adds a small L2 penalty on the non-intercept columns (column 0 is
    never penalised) so a separated bootstrap resample stays finite.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    single = weights is None or np.ndim(weights) == 1
    w = np.ones((1, len(y))) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    batch, k = w.shape[0], x.shape[1]
    beta = np.zeros((batch, k))
    penalty = np.eye(k) * ridge
    penalty[0, 0] = 0.0
    outer = (x[:, :, None] * x[:, None, :]).reshape(len(y), k * k)  # per-row x x^T, for a matmul Hessian
    converged = False
    iteration = 0
    for iteration in range(1, max_iter + 1):  # noqa: B007 (reported)
        p = _sigmoid(beta @ x.T)  # (B, n)
        grad = ((y - p) * w) @ x - beta @ penalty  # (B, k)
        curvature = w * p * (1.0 - p)  # (B, n)
        hess = (curvature @ outer).reshape(batch, k, k) + penalty  # (B, k, k)
        # a tiny jitter keeps a singular Hessian (e.g. a resample without length variation) solvable
        hess += np.eye(k) * 1e-12
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        beta = beta + step
        if float(np.max(np.abs(step))) < tol:
            converged = True
            break
    coef = beta[0] if single else beta
    return LogitFit(coef=coef, converged=converged, iterations=iteration)


def length_controlled_win_rate(
    length_diff: np.ndarray,
    outcome: np.ndarray,
    groups: np.ndarray,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """sigmoid(b0) of the model above, with a percentile bootstrap CI over groups (cases: both verdicts of a
    case are resampled together). Returns the estimate, CI, slope (per standard deviation of the length
    difference), the scale and notes; `None` estimates when there is nothing to fit."""
    length_diff = np.asarray(length_diff, dtype=float)
    outcome = np.asarray(outcome, dtype=float)
    n = len(outcome)
    out: dict[str, Any] = {"n_verdicts": n, "estimate": None, "ci": [None, None], "slope_per_sd": None,
                           "length_sd": None, "notes": []}
    if n == 0:
        return out
    scale = float(np.std(length_diff))
    out["length_sd"] = scale
    if scale == 0.0 and np.any(length_diff != 0):
        # every answer differs from its reference by the same amount: equal length lies outside the data
        out["notes"].append("the length difference never varies (and is not 0): no length-controlled estimate")
        return out
    if scale == 0.0:
        # every answer is exactly as long as its reference: the model is the intercept alone (the raw rate)
        out["notes"].append("every answer is as long as its reference: the controlled rate is the raw rate")
        x = np.ones((n, 1))
    else:
        x = np.column_stack([np.ones(n), length_diff / scale])
    fit = fit_logistic(x, outcome)
    if not fit.converged:
        out["notes"].append("the logistic fit did not converge (separation: length decides every verdict); "
                            "the estimate is at its limit")
    out["estimate"] = float(_sigmoid(np.array(fit.coef[0])))
    out["slope_per_sd"] = float(fit.coef[1]) if x.shape[1] > 1 else None
    if n_boot > 0:
        _, inverse = np.unique(np.asarray(groups).astype(str), return_inverse=True)
        units = int(inverse.max()) + 1
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, units, size=(n_boot, units)) + np.arange(n_boot)[:, None] * units
        counts = np.bincount(draws.ravel(), minlength=n_boot * units).reshape(n_boot, units)
        boot = fit_logistic(x, outcome, counts[:, inverse], max_iter=50, tol=1e-8, ridge=1e-6)
        rates = _sigmoid(boot.coef[:, 0])
        alpha = (1.0 - level) / 2.0
        lo, hi = np.quantile(rates, [alpha, 1.0 - alpha])
        out["ci"] = [float(lo), float(hi)]
    return out
