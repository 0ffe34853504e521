"""Seeded, stratified sampling: N cases per split x tier, as in PersonaFeedback's generation study (50 each)."""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict

from tailorbench.errors import ConfigError
from tailorbench.schema import PairCase


def _cell_seed(seed: int, cell: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}\x1f{cell}".encode(), digest_size=8).digest(), "big")


def stratified_sample(cases: list[PairCase], per_tier: int | None, seed: int) -> list[PairCase]:
    """Up to `per_tier` cases from every split x tier cell, drawn with a generator seeded by (seed, cell), so
    adding cases to one cell never changes another cell's sample; source order is kept. None keeps all."""
    if per_tier is None:
        return list(cases)
    if per_tier < 1:
        raise ConfigError("--per-tier must be at least 1 (or use --all)")
    cells: dict[str, list[int]] = defaultdict(list)
    for index, case in enumerate(cases):
        cells[f"{case.split}/{case.tier}"].append(index)
    keep: set[int] = set()
    for cell, indices in cells.items():
        if len(indices) <= per_tier:
            keep.update(indices)
        else:
            keep.update(random.Random(_cell_seed(seed, cell)).sample(indices, per_tier))
    return [c for k, c in enumerate(cases) if k in keep]
