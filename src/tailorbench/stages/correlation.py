"""Spearman's rho and Kendall's tau-b in numpy (product code does not import scipy), with seeded bootstrap CIs
over items. Kendall's bootstrap is exact and vectorised: with item multiplicities w, the tau-b of the resample is
(w' (Sx*Sy) w) / sqrt((w'|Sx| w)(w'|Sy| w)), Sx = sign(x_i - x_j) (self-pairs have sign 0), so all resamples cost
one matrix product; memory is O(n^2) floats, fine for the few thousand items a study has."""

from __future__ import annotations

from typing import Any

import numpy as np

from tailorbench.agreement.bootstrap import Resampler, percentile_ci


def rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (as scipy.stats.rankdata's default)."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.r_[True, sorted_x[1:] != sorted_x[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    counts = np.diff(np.r_[first, len(x)])
    avg = first + (counts + 1) / 2.0
    ranks = np.empty(len(x))
    ranks[order] = avg[group]
    return ranks


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    den = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / den) if den > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return _pearson(rankdata(x), rankdata(y)) if len(x) >= 2 else float("nan")


def _signs(v: np.ndarray) -> np.ndarray:
    return np.sign(v[:, None] - v[None, :])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    sx, sy = _signs(x), _signs(y)
    den = float(np.sqrt(np.abs(sx).sum() * np.abs(sy).sum()))
    return float((sx * sy).sum() / den) if den > 0 else float("nan")


def correlations(
    x: np.ndarray, y: np.ndarray, n_resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, Any]:
    """Spearman and Kendall tau-b of paired values with percentile bootstrap CIs (items resampled jointly)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    out: dict[str, Any] = {"n": n}
    if n < 3:
        out.update(spearman=None, kendall=None, note="fewer than 3 paired items")
        return out
    rs = Resampler(n, n_resamples, seed)
    sx, sy = _signs(x), _signs(y)
    both, ax, ay = sx * sy, np.abs(sx), np.abs(sy)
    rho, tau = [], []
    for w in rs.weights():
        tau.append((w @ both * w).sum(1) / np.sqrt((w @ ax * w).sum(1) * (w @ ay * w).sum(1)))
        for row in w:
            idx = np.repeat(np.arange(n), row.astype(int))
            rho.append(spearman(x[idx], y[idx]))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau_all = np.concatenate(tau)
    stats = (("spearman", spearman(x, y), np.asarray(rho)), ("kendall", kendall_tau_b(x, y), tau_all))
    for name, point, boots in stats:
        ci = percentile_ci(boots[:, None], level)[0]
        out[name] = None if not np.isfinite(point) else point
        out[f"{name}_ci"] = ci.as_list()
        if ci.n_undefined:
            out[f"{name}_undefined_resamples"] = ci.n_undefined
    if out["spearman"] is None:
        out["note"] = "undefined: one side is constant"
    return out
