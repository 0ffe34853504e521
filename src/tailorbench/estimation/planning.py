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

from tailorbench.estimation.items import Items
from tailorbench.estimation.labels import HumanLabels
from tailorbench.estimation.ppi import ppi_mean, z_value
from tailorbench.estimation.records import AltPowerRow, PlanReport, PlanRow

__all__ = ["alt_test_power", "anchored_half_width", "human_half_width", "labels_needed", "plan_from_runs",
           "simulated_half_width"]


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
                   seed: int = 0, alt_draws: int = 200) -> PlanReport:
    """The plan from a pilot: the runs' labelled items (Y, Ŷ) as the pilot, N the runs' cases (or `items`); with
    several raters per item (pairwise), beside it the alt-test's power for the proxy (`alt_draws` per cell)."""
    from tailorbench.errors import ConfigError
    from tailorbench.estimation.items import read_items
    from tailorbench.estimation.labels import read_labels

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
    alt = _alt_inputs(labels, cases, labeled) if alt_draws else None
    alt_rows = alt_test_power(*alt, alt_draws, seed) if alt is not None else []
    if alt_draws and alt is None:
        notes.append("alt-test power: needs a pairwise pilot with two or more raters per item")
    return PlanReport(alt_test=alt_rows, alt_draws=alt_draws if alt_rows else 0, pilot=labels.source,
                      pilot_items=int(labeled.sum()), items=big_n, half_width=half_width,
                      level=level, rows=rows, lam=lam, correlation=corr, draws=draws, notes=notes)


#: the item counts and margins the alt-test power simulation tries (the authors' margins: 0.1 crowd workers,
#: 0.15 skilled annotators, 0.2 experts)
ALT_ITEMS = (30, 50, 100, 200, 400)
ALT_EPSILONS = (0.1, 0.15, 0.2)
#: the power the alt-test should have
ALT_POWER = 0.8


def alt_test_power(humans: np.ndarray, judge: np.ndarray, draws: int, seed: int,
                   items: tuple[int, ...] = ALT_ITEMS, epsilons: tuple[float, ...] = ALT_EPSILONS
                   ) -> list[AltPowerRow]:
    """How often the alt-test (Calderon et al., ACL 2025; `agreement/admissibility.alt_test`, accuracy
    alignment) passes the judge on m pilot items drawn with replacement, per margin ε: `humans` items × raters
    codes (−1 missing), `judge` item codes. A row per ε with the power at each m and the smallest m reaching
    ALT_POWER (None: none of `items`)."""
    from tailorbench.agreement.admissibility import AdmissibilityOptions, alt_test

    rng = np.random.default_rng(seed)
    k = int(max(humans.max(), judge.max())) + 1
    names = [f"h{j}" for j in range(humans.shape[1])]
    rows = []
    for eps in epsilons:
        power: dict[str, float] = {}
        for m in items:
            opts = AdmissibilityOptions(epsilon=eps, min_items=min(30, m), alignment="accuracy")
            passed = 0
            for _ in range(draws):
                pick = rng.integers(0, len(judge), m)
                passed += bool(alt_test(humans[pick], judge[pick], k, names, opts).get("passed"))
            power[str(m)] = passed / draws
        enough = next((m for m in items if power[str(m)] >= ALT_POWER), None)
        rows.append(AltPowerRow(epsilon=eps, power=power, items_needed=enough))
    return rows


def _alt_inputs(labels: HumanLabels, cases: Items, labeled: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(human codes items × raters, the proxy's codes) of the pilot's pairwise items with two or more raters;
    the proxy's code is its choice (1 chosen, 0 rejected; its ties left out). None without such items."""
    if cases.kind != "pairwise" or cases.proxy is None:
        return None
    ids = [c for c, lab in zip(cases.ids, labeled) if lab and len(labels.per_rater.get(c, {})) >= 2]
    proxy = dict(zip(cases.ids, cases.proxy))
    ids = [c for c in ids if proxy[c] != 0.5]
    if not ids:
        return None
    raters = sorted({r for c in ids for r in labels.per_rater[c]})
    where = {r: j for j, r in enumerate(raters)}
    humans = np.full((len(ids), len(raters)), -1, dtype=np.int64)
    for i, c in enumerate(ids):
        for r, v in labels.per_rater[c].items():
            humans[i, where[r]] = int(v >= 0.5)
    judge = np.array([int(proxy[c] > 0.5) for c in ids], dtype=np.int64)
    return humans, judge
