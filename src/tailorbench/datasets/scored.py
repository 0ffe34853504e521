"""Scored (HelpSteer2-style) preference data: JSONL rows of `prompt`, `response` and a numeric score column
(`helpfulness` unless the option `score_column` names another; `.jsonl.gz` read as is). Every pair of responses
to one prompt whose scores differ by more than `min_gap` (default 2) becomes a case, the higher-scored answer
chosen. A prompt stands in for a user (`prompt:<hash>`), so splitting by user keeps a prompt's pairs together.

Declared names: one split, `general`; tiers easy / medium / hard from the score gap (there is no annotator
agreement: a gap of at least 4 is easy, at least 3 medium, else hard).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator, Mapping
from itertools import combinations
from pathlib import Path
from typing import Any, ClassVar

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.layouts import Layout, register_layout
from tailorbench.datasets.rows import InvalidRows, first_jsonl_row, read_jsonl
from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import PairCase

#: a scored prompt stands in for a user (its pairs share the prompt), so the split keeps prompts apart
SCORED_USER_PREFIX = "prompt:"
DEFAULT_SCORE_COLUMN = "helpfulness"
DEFAULT_MIN_GAP = 2.0


def is_scored(path: Path, score_column: str | None = None) -> bool:
    """Scored data: a JSONL file whose first row carries prompt and response (and `score_column`, when given)."""
    if not path.is_file():
        return False
    row = first_jsonl_row(path)
    wanted = {"prompt", "response"} | ({score_column} if score_column else set())
    return row is not None and wanted <= row.keys()


def tier_for_gap(gap: float) -> str:
    """Scored pairs have no annotator agreement; the score gap stands in for it (wide gaps are easy)."""
    return "easy" if gap >= 4 else "medium" if gap >= 3 else "hard"


def read_scored(path: Path, invalid: InvalidRows, score_column: str = DEFAULT_SCORE_COLUMN,
                min_gap: float = DEFAULT_MIN_GAP) -> tuple[list[PairCase], dict[str, Any]]:
    """The pairs of `path` and the counts (`scored_rows`, `prompts`, `pairs`, `pairs_with_gap_at_most_G`). Rows
    with a missing or non-numeric score are errors naming the line."""
    by_prompt: dict[str, list[tuple[str, float]]] = defaultdict(list)
    rows = 0
    for line, row in read_jsonl(path, invalid):
        try:
            for key in ("prompt", "response", score_column):
                if key not in row or row[key] is None:
                    raise DataError(path, line, key, "missing required field")
            try:
                score = float(row[score_column])
            except (TypeError, ValueError):
                raise DataError(path, line, score_column, f"not a number: {row[score_column]!r}") from None
        except DataError as error:
            invalid.handle(error)
            continue
        by_prompt[str(row["prompt"])].append((str(row["response"]), score))
        rows += 1
    cases: list[PairCase] = []
    below_gap = 0
    for prompt, responses in by_prompt.items():
        user = SCORED_USER_PREFIX + hashlib.blake2b(prompt.encode(), digest_size=6).hexdigest()
        for (ra, sa), (rb, sb) in combinations(responses, 2):
            gap = abs(sa - sb)
            if gap <= min_gap or ra == rb or not ra.strip() or not rb.strip():
                below_gap += 1
                continue
            chosen, rejected = (ra, rb) if sa > sb else (rb, ra)
            cases.append(PairCase(
                id=f"{user}/{len(cases)}", split="general", tier=tier_for_gap(gap), user_id=user,
                question=prompt, chosen=chosen, rejected=rejected, meta={"score_gap": gap, "source": str(path)},
            ))
    stats = {"scored_rows": rows, "prompts": len(by_prompt), "pairs": len(cases),
             f"pairs_with_gap_at_most_{min_gap:g}": below_gap}
    return cases, stats


def _options(options: Mapping[str, Any]) -> tuple[str, float]:
    unknown = sorted(set(options) - {"score_column", "min_gap"})
    if unknown:
        raise ConfigError(f"unknown option(s) for the scored layout: {', '.join(unknown)} "
                          "(known: score_column, min_gap)")
    column = str(options.get("score_column") or DEFAULT_SCORE_COLUMN)
    try:
        gap = float(options.get("min_gap", DEFAULT_MIN_GAP))
    except (TypeError, ValueError):
        raise ConfigError(f"min_gap must be a number, got {options.get('min_gap')!r}") from None
    return column, gap


@register_layout
class ScoredLayout(Layout):
    """Scored preference data (prompt, response, score) turned into pairs."""

    labels: ClassVar[str] = "not stated"
    chosen_is: ClassVar[str] = (
        "the response with the higher score in the data's score column (who scored it is not stated)"
    )

    name = "scored"
    expects = "a JSONL (or .jsonl.gz) file of prompt, response and a score column (helpfulness by default)"
    splits = ("general",)
    priority = 30

    def detect(self, path: Path) -> bool:
        return is_scored(path)

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        yield from read_scored(path, invalid, *_options(options))[0]

    def load(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Benchmark:
        cases, stats = read_scored(path, invalid, *_options(options))
        return self.benchmark(spec, cases, invalid, files=[path], layout_stats=stats)
