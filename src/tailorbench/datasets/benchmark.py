"""`Benchmark`: the validated cases of one source, what its layout declares (split and tier names, in report
order) and what the readers saw on the way (skipped rows, personas, the files read)."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.datasets.pairs import PairIndex, index_pairs
from tailorbench.datasets.rows import InvalidRows, fingerprint_files
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, PairCase


@dataclass
class Benchmark:
    """Cases in source order, where they came from, and what the readers saw on the way."""

    source: str
    layout: str
    cases: list[PairCase]
    invalid: InvalidRows = field(default_factory=InvalidRows)
    personas_total: int | None = None
    personas_unused: list[str] = field(default_factory=list)
    persona_keys_renamed: int = 0
    #: every file the cases were read from (fingerprinted by their bytes)
    files: list[Path] = field(default_factory=list)
    #: the split and tier names the layout declares, in report order (PersonaFeedback's by default)
    splits: tuple[str, ...] = DEFAULT_SPLITS
    tiers: tuple[str, ...] = DEFAULT_TIERS
    #: the tiers from easiest to hardest (the declared order unless the layout says otherwise)
    difficulty: tuple[str, ...] | None = None
    #: counts only this layout has (scored data: prompts, pairs below the score gap ...)
    layout_stats: dict[str, Any] = field(default_factory=dict)
    _pairs: PairIndex | None = field(default=None, init=False, repr=False, compare=False)

    def fingerprint(self) -> str:
        """sha256 of the source files (or, for cases built in memory, of the cases' content in order):
        two runs with equal fingerprints saw the same data."""
        if self.files:
            return fingerprint_files(self.files)
        digest = hashlib.sha256()
        for case in self.cases:
            digest.update(case.model_dump_json().encode("utf-8"))
            digest.update(b"\n")
        return digest.hexdigest()

    def pair_index(self) -> PairIndex:
        """Repeats, swapped labels and tier overlap of the cases' pairs, computed once (again if `cases` was
        replaced, grew or shrank)."""
        if self._pairs is None or self._pairs.cases is not self.cases or len(self._pairs.pair_ids) != len(self.cases):
            self._pairs = index_pairs(self.cases)
        return self._pairs

    def names(self) -> dict[str, list[str]]:
        """The declared split and tier names in order (and the difficulty order when the layout gives one):
        what the manifest records and every report lays its table out by."""
        out = {"splits": list(self.splits), "tiers": list(self.tiers)}
        if self.difficulty is not None and tuple(self.difficulty) != tuple(self.tiers):
            out["difficulty"] = list(self.difficulty)
        return out

    def stats(self) -> dict[str, Any]:
        """Counts for the manifest: rows per split/tier, repeated rows, label flips, skipped rows, and the
        split and tier names the layout declares."""
        per: Counter[str] = Counter(f"{c.split}/{c.tier}" for c in self.cases)
        pairs = self.pair_index()
        return {
            "source": self.source,
            "layout": self.layout,
            **self.names(),
            "rows": len(self.cases),
            "rows_per_split_tier": dict(sorted(per.items())),
            "repeated_rows": pairs.repeated_rows,
            "label_flipped_rows": pairs.flipped_rows,
            "skipped_rows": len(self.invalid.rows),
            "skipped": self.invalid.as_dicts(),
            "persona_keys_renamed": self.persona_keys_renamed,
            "personas_total": self.personas_total,
            "personas_unused": len(self.personas_unused),
        }
