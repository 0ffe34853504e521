"""Seeded, vectorised bootstrap: every confidence interval of tailorbench comes from here.

`bootstrap_ci` is the interval of a mean over cases (or over whole users: a cluster bootstrap), with an exact
multinomial shortcut when the scores take few distinct values; `Resampler` + `percentile_ci` are the joint
bootstrap of the agreement statistics:

Every statistic here is a function of per-item sufficient statistics summed over items, so one resample is a
vector of item multiplicities W (how often each item was drawn) and its totals are W @ X. All statistics of a
report share the same resamples (a joint bootstrap), and the same seed gives the same intervals.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: resamples of a confidence interval unless a verb is told otherwise (`--n-boot`)
N_BOOT = 1000
#: the most float64 cells of stacked per-item statistics held at once (about 256 MB)
_CELL_BUDGET = 32_000_000


@dataclass(frozen=True)
class Resampler:
    """Draws `n_resamples` bootstrap resamples of `n_items` items, chunk by chunk, reproducibly."""

    n_items: int
    n_resamples: int = 1000
    seed: int = 0
    chunk: int = 250

    def weights(self) -> Iterator[np.ndarray]:
        """Yield (b, n_items) float arrays of item multiplicities; chunk c is seeded by (seed, c)."""
        n = self.n_items
        for c, start in enumerate(range(0, self.n_resamples, self.chunk)):
            b = min(self.chunk, self.n_resamples - start)
            rng = np.random.default_rng([self.seed, c])
            idx = rng.integers(0, n, size=(b, n))
            idx += (np.arange(b, dtype=np.int64) * n)[:, None]
            yield np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)

    def totals(self, blocks: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Per-item blocks (n_items, d_j) -> resampled totals (n_resamples, d_j), in one pass per batch."""
        out: list[np.ndarray | None] = [None] * len(blocks)
        batch: list[int] = []
        cells = 0
        for j, block in enumerate(blocks):
            if block.shape[0] != self.n_items:
                raise ValueError(f"block {j} has {block.shape[0]} rows, expected {self.n_items}")
            if batch and cells + block.size > _CELL_BUDGET:
                self._run(blocks, batch, out)
                batch, cells = [], 0
            batch.append(j)
            cells += block.size
        if batch:
            self._run(blocks, batch, out)
        return [o for o in out if o is not None]

    def _run(self, blocks: Sequence[np.ndarray], batch: list[int], out: list[np.ndarray | None]) -> None:
        x = np.hstack([blocks[j].reshape(self.n_items, -1).astype(np.float64, copy=False) for j in batch])
        totals = np.vstack([w @ x for w in self.weights()])
        start = 0
        for j in batch:
            width = blocks[j].reshape(self.n_items, -1).shape[1]
            out[j] = totals[:, start : start + width]
            start += width


@dataclass(frozen=True)
class Interval:
    """A percentile interval and how many resamples left the statistic undefined (excluded from it)."""

    lo: float | None
    hi: float | None
    n_undefined: int = 0

    def as_list(self) -> list[float | None]:
        return [self.lo, self.hi]


def percentile_ci(samples: np.ndarray, level: float = 0.95) -> list[Interval]:
    """Percentile interval per column of `samples` (n_resamples, ...); NaN resamples are counted, not used."""
    flat = samples.reshape(samples.shape[0], -1)
    tail = (1.0 - level) / 2.0 * 100.0
    out: list[Interval] = []
    for col in flat.T:
        ok = col[np.isfinite(col)]
        bad = int(col.size - ok.size)
        if ok.size == 0:
            out.append(Interval(None, None, bad))
            continue
        lo, hi = np.percentile(ok, [tail, 100.0 - tail])
        out.append(Interval(float(lo), float(hi), bad))
    return out


def seed_for(seed: int, label: str) -> int:
    """The bootstrap seed of one cell: `seed` and the cell's label, hashed (shared by gen-eval's results)."""
    return int.from_bytes(hashlib.blake2b(f"{seed}\x1f{label}".encode(), digest_size=4).digest(), "big")


def bootstrap_ci(
    values: np.ndarray,
    groups: np.ndarray | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `values`; with `groups`, whole groups (users) are resampled
    and the statistic is the pooled mean of the resampled cases. Vectorised, in chunks to bound memory."""
    if len(values) == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    distinct, value_counts = np.unique(values.astype(float), return_counts=True)
    if groups is None and len(distinct) <= 64:
        # resampling n cases whose scores take K distinct values is a multinomial draw over those values:
        # exact, and O(n_boot * K) instead of O(n_boot * n)
        draws = rng.multinomial(len(values), value_counts / len(values), size=n_boot)
        stats = draws @ distinct / len(values)
    else:
        if groups is None:
            sums, counts = values.astype(float), np.ones(len(values))
        else:
            _, inverse = np.unique(groups.astype(str), return_inverse=True)
            sums = np.bincount(inverse, weights=values.astype(float))
            counts = np.bincount(inverse).astype(float)
        units = len(sums)
        stats = np.empty(n_boot)
        chunk = max(1, min(n_boot, 4_000_000 // max(units, 1)))
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            idx = rng.integers(0, units, size=(stop - start, units))
            stats[start:stop] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def paired_difference(
    a: Mapping[str, float], b: Mapping[str, float], n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any]:
    """Paired bootstrap of mean(a) - mean(b) over the cases both runs scored."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return {"n": 0, "difference": None, "ci": [None, None], "p_two_sided": None}
    diff = np.array([a[k] - b[k] for k in shared])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), size=(n_boot, len(diff)))
    boots = diff[idx].mean(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    p = 2 * min(float((boots <= 0).mean()), float((boots >= 0).mean()))
    return {
        "n": len(shared),
        "difference": float(diff.mean()),
        "ci": [float(lo), float(hi)],
        "p_two_sided": min(1.0, p),
        "a_better": int((diff > 0).sum()),
        "b_better": int((diff < 0).sum()),
    }
