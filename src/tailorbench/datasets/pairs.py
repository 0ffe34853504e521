"""One pass over a benchmark's pairs that the statistics, the integrity report and the runner share: which pairs
repeat, which come back with the labels swapped, and which other tiers hold them. Each distinct pair gets an
integer id from one hash of its texts' tuple (Python caches string hashes, not tuple hashes), and the tier
overlap is then a few vectorised operations over those ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tailorbench.schema import PairCase

Overlap = Literal["unique", "repeated", "contradicted"]
Key = tuple[str, str, str, str]


@dataclass
class PairIndex:
    """Per case (in order): the id of its pair (user, question, chosen, rejected) and whether the swapped pair is
    in the data; `n_pairs` distinct pairs."""

    cases: Sequence[PairCase]
    pair_ids: list[int]
    n_pairs: int
    swapped: list[bool]

    @property
    def repeated_rows(self) -> int:
        return len(self.pair_ids) - self.n_pairs

    @property
    def flipped_rows(self) -> int:
        return sum(self.swapped)

    def overlap(self) -> list[Overlap]:
        """Per case: `contradicted` when the same user's pair is also in the data with the labels swapped,
        `repeated` when another split/tier holds it with the same label, else `unique`. A score model gives a
        pair one order, so of a contradicted pair's two rows it gets exactly one right."""
        if not self.repeated_rows and not self.flipped_rows:
            return ["unique"] * len(self.pair_ids)
        import numpy as np

        cell_code: dict[tuple[str, str], int] = {}
        cells = np.fromiter((cell_code.setdefault((c.split, c.tier), len(cell_code)) for c in self.cases), np.int64,
                            len(self.pair_ids))
        ids = np.asarray(self.pair_ids, dtype=np.int64)
        low = np.full(self.n_pairs, np.iinfo(np.int64).max)
        high = np.full(self.n_pairs, -1)
        np.minimum.at(low, ids, cells)
        np.maximum.at(high, ids, cells)
        kinds: Any = np.where(np.asarray(self.swapped), "contradicted",
                              np.where(low[ids] != high[ids], "repeated", "unique"))
        return kinds.tolist()


def index_pairs(cases: Sequence[PairCase]) -> PairIndex:
    ids: dict[Key, int] = {}
    pair_ids = [ids.setdefault((c.user_id, c.question, c.chosen, c.rejected), len(ids)) for c in cases]
    swapped = [(c.user_id, c.question, c.rejected, c.chosen) in ids for c in cases]
    return PairIndex(cases, pair_ids, len(ids), swapped)


def tier_overlap(cases: Sequence[PairCase]) -> list[Overlap]:
    """`PairIndex.overlap` of `cases` (for a `Benchmark`, `benchmark.pair_index().overlap()` reuses its index)."""
    return index_pairs(cases).overlap()
