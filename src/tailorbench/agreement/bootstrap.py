"""Seeded, vectorised bootstrap over items.

Every statistic here is a function of per-item sufficient statistics summed over items, so one resample is a
vector of item multiplicities W (how often each item was drawn) and its totals are W @ X. All statistics of a
report share the same resamples (a joint bootstrap), and the same seed gives the same intervals.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

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
