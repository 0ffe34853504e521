"""One pass over a benchmark's pairs that the statistics, the integrity report and the runner share: which pairs
repeat, which come back with the labels swapped, and which other tiers hold them. Keys are tuples of the texts
(Python caches string hashes, so this is cheaper than digests)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tailorbench.schema import PairCase

Overlap = Literal["unique", "repeated", "contradicted"]
Key = tuple[str, str, str, str]


@dataclass
class PairIndex:
    """Per case (in order): its pair key and whether the swapped pair is in the data; per key: how many rows
    hold it."""

    cases: Sequence[PairCase]
    keys: list[Key]
    swapped: list[bool]
    rows: Counter[Key]

    @property
    def repeated_rows(self) -> int:
        return len(self.keys) - len(self.rows)

    @property
    def flipped_rows(self) -> int:
        return sum(self.swapped)

    def overlap(self) -> list[Overlap]:
        """Per case: `contradicted` when the same user's pair is also in the data with the labels swapped,
        `repeated` when another split/tier holds it with the same label, else `unique`. A score model gives a
        pair one order, so of a contradicted pair's two rows it gets exactly one right."""
        if not self.repeated_rows and not self.flipped_rows:
            return ["unique"] * len(self.keys)
        first_cell: dict[Key, tuple[str, str]] = {}
        in_two_cells: set[Key] = set()
        for case, key in zip(self.cases, self.keys):
            if self.rows[key] > 1 and first_cell.setdefault(key, (case.split, case.tier)) != (case.split, case.tier):
                in_two_cells.add(key)
        return ["contradicted" if s else "repeated" if key in in_two_cells else "unique"
                for s, key in zip(self.swapped, self.keys)]


def index_pairs(cases: Sequence[PairCase]) -> PairIndex:
    keys = [(c.user_id, c.question, c.chosen, c.rejected) for c in cases]
    rows = Counter(keys)
    return PairIndex(cases, keys, [(u, q, r, c) in rows for u, q, c, r in keys], rows)


def tier_overlap(cases: Sequence[PairCase]) -> list[Overlap]:
    """`PairIndex.overlap` of `cases` (for a `Benchmark`, `benchmark.pair_index().overlap()` reuses its index)."""
    return index_pairs(cases).overlap()
