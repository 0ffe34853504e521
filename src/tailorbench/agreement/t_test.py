"""Student's t distribution (through the regularized incomplete beta function), the one-sided paired t-test
and the Benjamini-Yekutieli correction the alt-test uses (`admissibility.py`): product code does not import
scipy, so they are written here and checked against scipy in the tests."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t < 0 else 1.0
    tail = 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t))
    return tail if t < 0 else 1.0 - tail


def t_test_less(d: np.ndarray, mu: float) -> tuple[float, float]:
    """One-sided one-sample t-test of H0: mean(d) >= mu against mean(d) < mu: (t, p).

    With zero variance t is -inf (p = 0) when the mean is below mu, +inf (p = 1) above it, as scipy's
    `ttest_1samp(d, mu, alternative="less")` gives; a mean exactly at mu (scipy: NaN) is p = 1, not rejected.
    """
    n = d.size
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else math.nan
    if n < 2 or math.isnan(sd):
        return math.nan, math.nan
    if sd == 0.0:
        if mean == mu:
            return math.nan, 1.0
        return (-math.inf, 0.0) if mean < mu else (math.inf, 1.0)
    t = (mean - mu) / (sd / math.sqrt(n))
    return t, t_cdf(t, n - 1)


def by_adjust(p: Sequence[float]) -> np.ndarray:
    """Benjamini-Yekutieli adjusted p-values (step-up, arbitrary dependence): a hypothesis is rejected at FDR q
    when its adjusted p-value is <= q (what `scipy.stats.false_discovery_control(p, method="by")` returns)."""
    ps = np.asarray(p, dtype=float)
    m = ps.size
    if m == 0:
        return ps
    order = np.argsort(ps, kind="stable")
    harmonic = float((1.0 / np.arange(1, m + 1)).sum())
    scaled = ps[order] * m * harmonic / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out
