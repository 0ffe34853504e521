"""Personalized RewardBench (Hugging Face QiyaoMa/Personalized-RewardBench; github.com/Martin-qyma/Personalized-
RewardBench): chosen / rejected answers under one user's rubric, read as pairs. The release on the hub is one Parquet
file per subset, `<Subset>/<split>-00000-of-00001.parquet` (read in row order, so the seed-42 positions fall on the
rows the authors' scripts drew them for); JSONL copies named `<Subset>_<split>.jsonl` or `<Subset>/<split>.jsonl`
are read too (the GitHub repository's `data/` folder holds other rows: LaMP-QA questions without chosen/rejected,
which this layout refuses). One row each of the dataset card's keys: `id`, `question`, `profile` (the user's
past questions, `{id, category, text}`), `rubric_aspects`, `narrative`, `category`, `chosen`, `rejected`.

What an RM may see follows the card: the question and, as the persona, the profile (`History`); the rubric and
the narrative are "strictly excluded from RM input" and kept in `meta` only. Splits: the three subsets by the
short names of `evaluation/pairwise.py` (`Lifestyle`, `Art`, `Society`); tiers: the dataset split (`test`).
`meta.authors_order` is where `prepare_pairwise_prompts` (seed 42) puts the chosen answer (`AB`: as A).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.choice import unknown_options
from tailorbench.datasets.layouts import Layout, register_layout
from tailorbench.datasets.rows import InvalidRows, pair_hash, read_jsonl, require_id, require_text
from tailorbench.errors import DataError
from tailorbench.schema import PairCase

#: `SUBSET_SHORT` of evaluation/pairwise.py
SUBSETS = {"Lifestyle_and_Personal_Development": "Lifestyle", "Art_and_Entertainment": "Art",
           "Society_and_Culture": "Society"}
SPLITS = ("test", "train", "validation")
_FILE = re.compile(r"^(" + "|".join(SUBSETS) + r")_(" + "|".join(SPLITS) + r")\.jsonl$")
#: the hub release's shards: `<Subset>/<split>-00000-of-00001.parquet`
_SHARD = re.compile(r"^(" + "|".join(SPLITS) + r")-\d{5}-of-\d{5}\.parquet$")
AUTHORS_SEED = 42


def subset_files(path: Path) -> list[tuple[Path, str, str]]:
    """(file, subset short name, split) of every subset file at `path` (a file or a folder)."""
    out = []
    candidates = [path] if path.is_file() else (sorted(path.glob("*.jsonl")) + sorted(path.glob("*/*.jsonl"))
                                                + sorted(path.glob("*/*.parquet")))
    for file in candidates:
        match = _FILE.match(file.name)
        shard = _SHARD.match(file.name)
        if match:
            out.append((file, SUBSETS[match.group(1)], match.group(2)))
        elif file.parent.name in SUBSETS and file.suffix == ".jsonl" and file.stem in SPLITS:
            out.append((file, SUBSETS[file.parent.name], file.stem))
        elif file.parent.name in SUBSETS and shard:
            out.append((file, SUBSETS[file.parent.name], shard.group(1)))
    return out


def read_rows(path: Path, invalid: InvalidRows) -> list[tuple[int, dict[str, Any]]]:
    """(line or row number, row) of a subset file, JSONL or Parquet, in file order."""
    if path.suffix == ".parquet":
        from tailorbench.datasets.parquet import read_parquet

        return read_parquet(path)
    return list(read_jsonl(path, invalid))


def authors_positions(n: int, seed: int = AUTHORS_SEED) -> list[bool]:
    """`prepare_pairwise_prompts`: `random.seed(seed)`, then per item `random.random() < 0.5` (chosen as A)."""
    rng = random.Random(seed)
    return [rng.random() < 0.5 for _ in range(n)]


def _profile(row: dict[str, Any], path: Path, line: int) -> str:
    profile = row.get("profile")
    if not isinstance(profile, list):
        raise DataError(path, line, "profile", "missing required field" if profile is None
                        else f"expected a list of past questions, got {type(profile).__name__}")
    lines = []
    for number, entry in enumerate(profile):
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            raise DataError(path, line, f"profile[{number}].text", "expected text")
        category = entry.get("category")
        lines.append(f"[{category}] {entry['text']}" if isinstance(category, str) and category else entry["text"])
    return "\n".join(lines)


def read_file(path: Path, subset: str, split: str, invalid: InvalidRows, seen: dict[str, str]) -> Iterator[PairCase]:
    rows = read_rows(path, invalid)
    for (line, row), chosen_first in zip(rows, authors_positions(len(rows))):
        try:
            ident = require_id(row, "id", path, line)
            question = require_text(row, "question", path, line)
            chosen = require_text(row, "chosen", path, line)
            rejected = require_text(row, "rejected", path, line)
            history = _profile(row, path, line)
            rubric = row.get("rubric_aspects")
            if not isinstance(rubric, list):
                raise DataError(path, line, "rubric_aspects", "missing required field" if rubric is None
                                else "expected a list of {aspect, evidence, reason}")
            if chosen == rejected:
                raise DataError(path, line, "rejected", "identical to chosen")
            key = f"{subset}/{split}/{ident}"
            if key in seen:
                raise DataError(path, line, "id", f"duplicate id {ident!r} (first at {seen[key]})")
            seen[key] = f"{path}:{line}"
        except DataError as error:
            invalid.handle(error)
            continue
        user = f"{subset}:{ident}"
        yield PairCase(
            id=key, split=subset, tier=split, user_id=user, persona={"History": history} if history else {},
            question=question, chosen=chosen, rejected=rejected,
            meta={"pair_hash": pair_hash(user, question, chosen, rejected), "category": row.get("category"),
                  "rubric_aspects": rubric, "narrative": row.get("narrative"),
                  "authors_order": "AB" if chosen_first else "BA"},
        )


@register_layout
class PersonalizedRewardBenchLayout(Layout):
    """Personalized RewardBench's subset files as pairs."""

    labels: ClassVar[str] = "constructed"
    chosen_is: ClassVar[str] = (
        "the response the release marks as chosen under the user's rubric (Personalized RewardBench's "
        "construction), not the user's own choice"
    )

    name = "personalized-rewardbench"
    expects = ("Personalized RewardBench files: the hub release <Subset>/test-00000-of-00001.parquet, or JSONL "
               "<Subset>_<split>.jsonl or <Subset>/<split>.jsonl (Subset: Lifestyle_and_Personal_Development, "
               "Art_and_Entertainment, Society_and_Culture)")
    splits = tuple(SUBSETS.values())
    tiers = SPLITS
    aliases: ClassVar[Mapping[str, str]] = {k.lower(): v for k, v in SUBSETS.items()}
    priority = 20
    card: ClassVar[Mapping[str, str]] = dict(
        licence="see the dataset card of QiyaoMa/Personalized-RewardBench",
        size="three subsets (Lifestyle, Art, Society), test split", source="huggingface.co/datasets/QiyaoMa/"
        "Personalized-RewardBench", citation="Ma et al., Personalized RewardBench: Evaluating Reward Models with "
        "Human Aligned Personalization, arXiv 2604.07343")

    def detect(self, path: Path) -> bool:
        return bool(subset_files(path))

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        unknown_options(self.name, options, ())
        files = subset_files(path)
        if not files:
            raise DataError(path, None, None, f"no Personalized RewardBench file ({self.expects})")
        seen: dict[str, str] = {}
        for file, subset, split in files:
            yield from read_file(file, subset, split, invalid, seen)

    def load(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Benchmark:
        cases = list(self.read(path, invalid, options))
        return self.benchmark(spec, cases, invalid, files=self.files(path), layout_stats={"card": dict(self.card)})

    def files(self, path: Path) -> list[Path]:
        return [file for file, _, _ in subset_files(path)]
