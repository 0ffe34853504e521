"""One entry point for every benchmark source: detects the layout of a path (or a named source) and returns
validated PairCases plus the statistics a manifest must record (repeats, flips, skipped rows)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.datasets import personafeedback as pf
from tailorbench.datasets.native import first_row, looks_native, read_native
from tailorbench.datasets.pairs import PairIndex, index_pairs
from tailorbench.datasets.rows import InvalidRows, fingerprint_files
from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import PairCase

DEMO = "demo"
PERSONAFEEDBACK = "personafeedback"


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

    def stats(self) -> dict[str, Any]:
        """Counts for the manifest: rows per split/tier, repeated rows, label flips, skipped rows."""
        per: Counter[str] = Counter(f"{c.split}/{c.tier}" for c in self.cases)
        pairs = self.pair_index()
        return {
            "source": self.source,
            "layout": self.layout,
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


def demo_path() -> Path:
    return Path(__file__).parent / "demo" / "demo.jsonl"


def detect_layout(path: Path) -> str:
    """`hub`, `mirror` or `native`; a clear error for anything else."""
    if path.is_dir():
        if pf.is_hub_layout(path):
            return "hub"
        if pf.is_mirror_layout(path):
            return "mirror"
        raise DataError(
            path, None, None,
            "not a known benchmark layout: expected data/<split>/<tier>.jsonl + persona/all_personas.jsonl "
            "(hub) or <split>_<tier>.jsonl + persona_all/ (release mirror)",
        )
    if not path.exists():
        raise DataError(path, None, None, "no such file or directory")
    row = first_row(path)
    if row is not None and not looks_native(row):
        raise DataError(
            path, 1, None,
            "not native PairCase JSONL (needs split, tier, rejected); for a PersonaFeedback tier file "
            "pass the directory that holds it and its personas",
        )
    return "native"


def load_benchmark(data: str | Path, skip_invalid: bool = False) -> Benchmark:
    """Load `demo`, `personafeedback` (hub), or a path in any supported layout."""
    invalid = InvalidRows(skip=skip_invalid)
    spec = str(data)
    if spec == DEMO:
        path = demo_path()
    elif spec == PERSONAFEEDBACK:
        from tailorbench.datasets.hub import fetch_personafeedback

        path = fetch_personafeedback()
    else:
        path = Path(spec).expanduser()
    layout = detect_layout(path)
    if layout == "native":
        cases = list(read_native(path, invalid))
        return Benchmark(spec, layout, cases, invalid, files=[path])
    personas = pf.load_hub_personas(path, invalid) if layout == "hub" else pf.load_mirror_personas(path, invalid)
    files = list(pf.hub_case_files(path) if layout == "hub" else pf.mirror_case_files(path))
    seen: dict[str, str] = {}  # case ids of every file: one id twice is an error naming both places
    cases = list(_chain(pf.read_pf_rows(f, s, t, personas, invalid, seen) for f, s, t in files))
    if not cases and not invalid.rows:
        raise DataError(path, None, None, "no case files found")
    unused = sorted(set(personas.by_key) - personas.used)
    sources = [f for f, _, _ in files] + personas.files
    return Benchmark(spec, layout, cases, invalid, len(personas.by_key), unused, personas.renamed_keys, sources)


def _chain(parts: Iterator[Iterator[PairCase]]) -> Iterator[PairCase]:
    for part in parts:
        yield from part


def filter_cases(
    cases: list[PairCase], splits: list[str] | None = None, tiers: list[str] | None = None
) -> list[PairCase]:
    """Filter by normalised split/tier names (`mid` and `spedific` accepted)."""
    from tailorbench.datasets.rows import normalise_split, normalise_tier

    def norm(names: list[str] | None, fn: Any, kind: str) -> set[str] | None:
        if not names:
            return None
        out = set()
        for name in names:
            value = fn(name)
            if value is None:
                raise ConfigError(f"unknown {kind} {name!r}")
            out.add(value)
        return out

    want_split = norm(splits, normalise_split, "split")
    want_tier = norm(tiers, normalise_tier, "tier")
    return [
        c for c in cases
        if (want_split is None or c.split in want_split) and (want_tier is None or c.tier in want_tier)
    ]
