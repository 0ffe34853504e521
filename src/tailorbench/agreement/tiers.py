"""Tiering: multi-annotator pairwise labels -> PairCase records with a tier from per-item agreement.

Input: an items JSONL (one pair per line: id, split, user_id, persona, question, answer_a, answer_b, optional
meta) and long-format ratings with item = the pair's id and label "A" or "B". `chosen` is the majority's
answer; the tier comes from P_i, the share of agreeing annotator pairs on the item (kappa is not defined per
item), with thresholds in TierRule. Fleiss' kappa is then reported per resulting tier.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from tailorbench.agreement import stats as st
from tailorbench.agreement.ratings import RatingSet
from tailorbench.bootstrap import Resampler, percentile_ci
from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.native import declared_names, write_benchmark
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, PairCase

_ITEM_KEYS = ("id", "split", "user_id", "question", "answer_a", "answer_b")


@dataclass(frozen=True)
class TierRule:
    """easy if P_i >= easy, medium if P_i >= medium, else hard; items need min_ratings ratings.

    With 9 annotators P_i is 1.0 (9-0), 0.778 (8-1), 0.611 (7-2), 0.5 (6-3), 0.444 (5-4): the defaults put
    8-9 agreeing annotators in easy, 7 in medium, 5-6 in hard.
    """

    easy: float = 0.75
    medium: float = 0.6
    min_ratings: int = 3

    def __post_init__(self) -> None:
        if not 0.0 <= self.medium <= self.easy <= 1.0:
            raise ConfigError(f"tier thresholds need 0 <= medium <= easy <= 1, got {self.medium}, {self.easy}")
        if self.min_ratings < 2:
            raise ConfigError("--min-ratings must be at least 2 (agreement needs two ratings)")

    def tier(self, p_i: float) -> str:
        if p_i >= self.easy:
            return "easy"
        return "medium" if p_i >= self.medium else "hard"


def read_items(path: str | Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """Items JSONL -> id -> (line, record), with every required field checked."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file")
    items: dict[str, tuple[int, dict[str, Any]]] = {}
    for line_no, record in read_jsonl(path, InvalidRows()):
        for key in _ITEM_KEYS:
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise DataError(path, line_no, key, "missing or not a non-empty string")
        if not isinstance(record.get("persona", {}), dict):
            raise DataError(path, line_no, "persona", "must be an object")
        if record["id"] in items:
            raise DataError(path, line_no, "id", f"duplicate of line {items[record['id']][0]}")
        items[record["id"]] = (line_no, record)
    return items


def _tier_stats(counts: np.ndarray, n_resamples: int, seed: int, level: float) -> dict[str, Any]:
    block = st.fleiss_block(counts)
    point = st.fleiss_from_totals(block.sum(axis=0), 2)
    (tot,) = Resampler(counts.shape[0], n_resamples, seed).totals([block])
    ci = percentile_ci(st.fleiss_from_totals(tot, 2), level)
    kappa = None if not np.isfinite(point[1]) else float(point[1])
    out: dict[str, Any] = {
        "n": int(counts.shape[0]),
        "percent_agreement": float(point[0]),
        "fleiss_kappa": {"value": kappa, "ci": ci[1].as_list()},
    }
    if kappa is None:
        out["fleiss_kappa"]["note"] = "every rating in this tier is the same position: kappa is undefined"
    return out


def build_tiers(
    items_path: str | Path,
    ratings: RatingSet,
    rule: TierRule | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    splits: tuple[str, ...] | None = None,
) -> tuple[list[PairCase], dict[str, Any]]:
    """PairCases (chosen = majority answer, tier from P_i: PersonaFeedback's easy / medium / hard) and a summary
    counting every skipped item. An item's split must be one of `splits` (default: those the items file
    declares in its `<name>.layout.json` sidecar, else PersonaFeedback's)."""
    rule = rule or TierRule()
    if splits is None:
        splits = declared_names(Path(items_path))[0]
    items = read_items(items_path)
    votes: dict[str, Counter[str]] = {}
    unknown = 0
    for r in ratings.ratings:
        if r.label not in ("A", "B"):
            raise DataError(r.source, r.line, "label", f"pairwise labels must be 'A' or 'B', got {r.label!r}")
        if r.item not in items:
            unknown += 1
            continue
        votes.setdefault(r.item, Counter())[str(r.label)] += 1
    skipped: Counter[str] = Counter()
    cases: list[PairCase] = []
    tier_counts: dict[str, list[list[int]]] = {t: [] for t in DEFAULT_TIERS}
    for item_id, (line_no, rec) in items.items():
        v = votes.get(item_id, Counter())
        a, b = v["A"], v["B"]
        if a + b == 0:
            skipped["no ratings"] += 1
            continue
        if a + b < rule.min_ratings:
            skipped[f"fewer than {rule.min_ratings} ratings"] += 1
            continue
        if a == b:
            skipped["tie (no majority)"] += 1
            continue
        n = a + b
        p_i = (a * (a - 1) + b * (b - 1)) / (n * (n - 1))
        if rec["split"] not in splits:
            raise DataError(items_path, line_no, "split", f"unknown split {rec['split']!r} (declared: "
                                                          f"{', '.join(splits)})")
        tier = rule.tier(p_i)
        a_wins = a > b
        meta = dict(rec.get("meta") or {})
        meta["annotation"] = {"votes": {"A": a, "B": b}, "p_i": p_i, "majority": "A" if a_wins else "B"}
        try:
            case = PairCase(
                id=item_id,
                split=rec["split"],
                tier=tier,
                user_id=rec["user_id"],
                persona=rec.get("persona") or {},
                question=rec["question"],
                chosen=rec["answer_a"] if a_wins else rec["answer_b"],
                rejected=rec["answer_b"] if a_wins else rec["answer_a"],
                meta=meta,
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"])
            raise DataError(items_path, line_no, field, err["msg"]) from exc
        cases.append(case)
        tier_counts[tier].append([a, b])
    per_tier = {
        t: _tier_stats(np.asarray(c, dtype=float), n_resamples, seed, level) for t, c in tier_counts.items() if c
    }
    summary: dict[str, Any] = {
        "n_items": len(items),
        "n_cases": len(cases),
        "rule": {
            "statistic": "P_i (share of agreeing annotator pairs)",
            "easy": f"P_i >= {rule.easy}",
            "medium": f"{rule.medium} <= P_i < {rule.easy}",
            "hard": f"P_i < {rule.medium}",
            "min_ratings": rule.min_ratings,
        },
        "tiers": {t: per_tier.get(t, {"n": 0}) for t in DEFAULT_TIERS},
        "skipped_items": dict(sorted(skipped.items())),
        "ratings_for_unknown_items": unknown,
        "missing_ratings": dict(sorted(ratings.missing.items())),
    }
    return cases, summary


def splits_in_order(splits: Iterable[str]) -> tuple[str, ...]:
    """Report order for the splits items carry: PersonaFeedback's when they use only those, else their order of
    first appearance (an annotation project holds items of any layout's splits)."""
    seen = tuple(dict.fromkeys(splits))
    return DEFAULT_SPLITS if set(seen) <= set(DEFAULT_SPLITS) else seen


def write_cases(cases: list[PairCase], path: str | Path, splits: tuple[str, ...] | None = None) -> None:
    """One `model_dump_json()` per line, UTF-8; written to a temporary file first so a failure never leaves
    a half-written benchmark in place. Splits other than PersonaFeedback's are declared in the sidecar
    `<name>.layout.json`, so `--data` reads the file back with them (`splits`, in report order; default:
    PersonaFeedback's when the cases use only those, else the cases' splits in order of first appearance)."""
    if splits is None:
        splits = splits_in_order(case.split for case in cases)
    write_benchmark(Benchmark(str(path), "native", cases, splits=splits), Path(path))
