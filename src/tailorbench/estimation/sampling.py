"""Which items people label: the three sampling designs and their inclusion probabilities.

- `uniform`: a simple random sample of n of the N items (π = n / N for every item);
- `stratified`: a simple random sample inside every stratum (split × tier), n allocated in proportion to the
  strata's sizes with at least two per stratum (π_h = n_h / N_h);
- `active`: each item drawn independently with its own probability, larger where the proxy is less sure
  (Zrnic & Candès 2024): π_i = n (η / N + (1 − η) u_i / Σu), capped at 1, where u_i is the proxy's uncertainty
  and η (default 0.2) keeps every item's chance away from 0 so the weights 1/π stay bounded.

Every draw takes a numpy Generator: a seed gives the same sample. The estimators in `ppi.py` read the
probabilities back (`labeled`, `pi`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DESIGNS", "Draw", "active_probabilities", "allocate", "draw", "uncertainty_from_margin"]

DESIGNS = ("uniform", "stratified", "active")
#: the share of an active plan's probability mass spread evenly over every item
ACTIVE_MIX = 0.2


@dataclass(frozen=True)
class Draw:
    """One sample: `labeled[i]` whether item i is drawn, `pi[i]` its inclusion probability, `design` how."""

    design: str
    labeled: np.ndarray
    pi: np.ndarray


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of n labels over strata of the given sizes, at least 2 per stratum (or all of a
    stratum smaller than 2), never more than a stratum holds; largest remainders get the rounding."""
    total = sum(sizes.values())
    if total == 0:
        return {}
    raw = {h: n * size / total for h, size in sizes.items()}
    out = {h: min(size, max(2, int(np.floor(raw[h])))) for h, size in sizes.items()}
    left = n - sum(out.values())
    for h in sorted(sizes, key=lambda h: (raw[h] - np.floor(raw[h])), reverse=True):
        if left <= 0:
            break
        if out[h] < sizes[h]:
            out[h] += 1
            left -= 1
    return out


def active_probabilities(uncertainty: np.ndarray, n: float, mix: float = ACTIVE_MIX) -> np.ndarray:
    """π_i = n (mix / N + (1 − mix) u_i / Σu), capped at 1, the mass the cap removes handed on to the items
    below it (so Σπ = n while n ≤ N). Uncertainties that are all zero give the uniform n / N."""
    u = np.clip(np.asarray(uncertainty, dtype=float), 0.0, None)
    big_n = len(u)
    if big_n == 0:
        return u
    share = u / u.sum() if u.sum() > 0 else np.full(big_n, 1.0 / big_n)
    base = mix / big_n + (1.0 - mix) * share
    pi = np.minimum(1.0, n * base)
    for _ in range(big_n):
        capped = pi >= 1.0
        room = n - capped.sum()
        free = base[~capped].sum()
        if room <= 0 or free <= 0:
            break
        new = np.where(capped, 1.0, np.minimum(1.0, room * base / free))
        if np.allclose(new, pi):
            break
        pi = new
    return pi


def uncertainty_from_margin(margin: np.ndarray) -> np.ndarray:
    """The proxy's uncertainty from its score margins (chosen − rejected, any scale): the margins scaled by their
    standard deviation become probabilities p = sigmoid(m / sd), and u = sqrt(p (1 − p)) (largest at a tie)."""
    m = np.asarray(margin, dtype=float)
    sd = float(m.std()) or 1.0
    p = 1.0 / (1.0 + np.exp(-m / sd))
    return np.sqrt(p * (1.0 - p))


def draw(design: str, n: int, rng: np.random.Generator, strata: np.ndarray | None = None,
         uncertainty: np.ndarray | None = None, size: int | None = None) -> Draw:
    """A sample of (about, for `active`) n of the items: `strata` (one label per item) for `stratified`,
    `uncertainty` (one per item) for `active`; `size` the number of items for `uniform`."""
    if design == "uniform":
        big_n = size if size is not None else len(strata if strata is not None else uncertainty)  # type: ignore[arg-type]
        labeled = np.zeros(big_n, dtype=bool)
        labeled[rng.choice(big_n, size=min(n, big_n), replace=False)] = True
        return Draw(design, labeled, np.full(big_n, min(n, big_n) / big_n))
    if design == "stratified":
        if strata is None:
            raise ValueError("a stratified draw needs the strata")
        labels = np.asarray(strata).astype(str)
        names, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
        quota = allocate({str(h): int(c) for h, c in zip(names, counts)}, n)
        labeled = np.zeros(len(labels), dtype=bool)
        pi = np.zeros(len(labels))
        for k, name in enumerate(names):
            where = np.flatnonzero(inverse == k)
            take = quota[str(name)]
            labeled[rng.choice(where, size=take, replace=False)] = True
            pi[where] = take / len(where)
        return Draw(design, labeled, pi)
    if design == "active":
        if uncertainty is None:
            raise ValueError("an active draw needs the proxy's uncertainty")
        pi = active_probabilities(uncertainty, n)
        return Draw(design, rng.random(len(pi)) < pi, pi)
    raise ValueError(f"unknown sampling design {design!r} (choose {', '.join(DESIGNS)})")
