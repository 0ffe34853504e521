"""`tailor estimate plan`: how many human labels a wanted interval half-width needs, from a pilot.

The pilot is a set of items with both the proxy's Ŷ and people's Y. With its moments (population variances, as the
estimators use them), the half-width of a (1 − α) interval at n human labels among N items is
- human-only: z · sd(Y) / √n;
- human-anchored (PPI++, λ power-tuned for that n): z · √(Var(Y − λŶ)/n + λ² Var(Ŷ)/(N − n)),
  λ = Cov(Y, Ŷ) / ((1 + n/(N − n)) Var(Ŷ)) clipped to [0, 1].
The smallest n reaching the wanted half-width is printed for each, and checked by simulation: `draws` samples of
n labelled and N − n unlabelled items drawn from the pilot with replacement, the median half-width of their
intervals (what the acceptance of the verb asks to be within 10% of the wanted one).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from tailorbench.estimate.ppi import ppi_mean, z_value
from tailorbench.estimate.records import PlanReport, PlanRow

__all__ = ["anchored_half_width", "human_half_width", "labels_needed", "plan_from_runs", "simulated_half_width"]


def _moments(y: np.ndarray, yhat: np.ndarray) -> tuple[float, float, float]:
    return float(np.var(y)), float(np.var(yhat)), float(np.mean((y - y.mean()) * (yhat - yhat.mean())))


def human_half_width(y: np.ndarray, n: int, alpha: float) -> float:
    return z_value(alpha) * math.sqrt(float(np.var(y)) / n)


def anchored_half_width(y: np.ndarray, yhat: np.ndarray, n: int, big_n: int, alpha: float) -> tuple[float, float]:
    """(half-width, λ) of the anchored interval at n labels among `big_n` items (n < big_n)."""
    var_y, var_h, cov = _moments(y, yhat)
    unlabeled = big_n - n
    lam = float(np.clip(cov / ((1.0 + n / unlabeled) * var_h), 0.0, 1.0)) if var_h > 0 else 0.0
    var = (var_y - 2 * lam * cov + lam**2 * var_h) / n + lam**2 * var_h / unlabeled
    return z_value(alpha) * math.sqrt(max(var, 0.0)), lam


def labels_needed(y: np.ndarray, yhat: np.ndarray, big_n: int, half_width: float, alpha: float
                  ) -> tuple[int | None, int | None, float]:
    """(human-only labels, anchored labels, λ at the anchored n): the smallest n whose half-width is at most
    `half_width`; None when even big_n − 1 labels (human-only: big_n) do not reach it."""
    human = math.ceil((z_value(alpha) * math.sqrt(float(np.var(y))) / half_width) ** 2)
    human_n = max(2, human) if human <= big_n else None
    lo, hi = 2, big_n - 1
    if hi < lo or anchored_half_width(y, yhat, hi, big_n, alpha)[0] > half_width:
        return human_n, None, 0.0
    while lo < hi:
        mid = (lo + hi) // 2
        if anchored_half_width(y, yhat, mid, big_n, alpha)[0] <= half_width:
            hi = mid
        else:
            lo = mid + 1
    return human_n, lo, anchored_half_width(y, yhat, lo, big_n, alpha)[1]


def simulated_half_width(y: np.ndarray, yhat: np.ndarray, n: int, big_n: int, alpha: float, draws: int,
                         seed: int, anchored: bool) -> float:
    """Median half-width over `draws` samples from the pilot: n labelled pairs and big_n − n unlabelled Ŷ drawn
    with replacement (human-only: the classical interval of the n labels)."""
    rng = np.random.default_rng(seed)
    widths = np.empty(draws)
    z = z_value(alpha)
    for k in range(draws):
        pick = rng.integers(0, len(y), n)
        if anchored:
            rest = yhat[rng.integers(0, len(y), big_n - n)]
            widths[k] = ppi_mean(y[pick], yhat[pick], rest, alpha).half_width
        else:
            widths[k] = z * float(np.std(y[pick])) / math.sqrt(n)
    return float(np.median(widths))


def plan_from_runs(system: Path, proxy: Path | None, labels_source: str | Path, half_width: float, level: float,
                   items: int | None = None, versus: Path | None = None, draws: int = 1000,
                   seed: int = 0) -> PlanReport:
    """The plan from a pilot: the runs' labelled items (Y, Ŷ) as the pilot, N the runs' cases (or `items`)."""
    from tailorbench.errors import ConfigError
    from tailorbench.estimate.items import read_items
    from tailorbench.estimate.labels import read_labels

    cases = read_items(system, proxy, versus)
    labels = read_labels(labels_source, cases.kind == "pairwise", set(cases.ids))
    labeled = np.array([c in labels.values for c in cases.ids], dtype=bool)
    if labeled.sum() < 10:
        raise ConfigError(f"the pilot has {int(labeled.sum())} labelled case(s): a plan needs at least 10")
    share = np.array([labels.values.get(c, 0.0) for c in cases.ids], dtype=float)
    y = cases.human_value(share)[labeled]
    yhat = cases.yhat[labeled]
    big_n = items if items is not None else len(cases.ids)
    alpha = 1.0 - level
    human_n, anchored_n, lam = labels_needed(y, yhat, big_n, half_width, alpha)
    rows = []
    for name, n, anchored in (("human-only", human_n, False), ("anchored", anchored_n, True)):
        if n is None:
            rows.append(PlanRow(estimate=name, labels=None, half_width=None, simulated_half_width=None))
            continue
        width = anchored_half_width(y, yhat, n, big_n, alpha)[0] if anchored else human_half_width(y, n, alpha)
        sim = simulated_half_width(y, yhat, n, big_n, alpha, draws, seed, anchored) if draws else None
        rows.append(PlanRow(estimate=name, labels=n, half_width=width, simulated_half_width=sim))
    notes = list(labels.notes)
    if anchored_n is None:
        notes.append(f"no number of labels below {big_n} reaches ±{half_width} with the proxy")
    corr = float(np.corrcoef(y, yhat)[0, 1]) if np.std(y) > 0 and np.std(yhat) > 0 else None
    return PlanReport(pilot=labels.source, pilot_items=int(labeled.sum()), items=big_n, half_width=half_width,
                      level=level, rows=rows, lam=lam, correlation=corr, draws=draws, notes=notes)
