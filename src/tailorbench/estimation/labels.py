"""People's labels as they come, and the chance each item had of being labelled.

Sources (`read_labels`):
- an annotation export folder (`tailor annotate export`: ratings.jsonl in the long format, items.jsonl with each
  item's payload, whose `meta.estimate_plan` the sampling plan put there and the import carried through);
- a long-format ratings file (.jsonl / .csv: item, rater, label, group; agreement/ratings.py);
- `benchmark`: the benchmark's own labels (`chosen` is what people preferred) for the items of a sampling plan.

Several raters of one item are aggregated: pairwise labels by majority (a tie counts ½), numeric labels and
win / tie / loss by their mean. Only the `human` group counts. Inclusion probabilities come from the sampling
plan (`--sample PLAN`, or the export's items): each item's `meta.estimate_plan` holds its `sampling` design,
`inclusion_probability` and `stratum`. Without them the caller must say the labelled items were a uniform
sample (`--assume-uniform`), which the report states.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.agreement.ratings import read_ratings_file
from tailorbench.agreement.records import DEFAULT_GROUP, Rating
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import ConfigError, DataError

__all__ = ["PLAN_KEY", "HumanLabels", "PlanEntry", "read_labels", "read_plan"]

#: the key of an item's `meta` under which a sampling plan records how the item was drawn
PLAN_KEY = "estimate_plan"
BENCHMARK = "benchmark"
_PAIRWISE = {"a": "A", "b": "B", "chosen": "chosen", "rejected": "rejected"}
_OUTCOME = {"win": 1.0, "tie": 0.5, "loss": 0.0}


@dataclass(frozen=True)
class PlanEntry:
    """How one item was drawn: the design, its inclusion probability and its stratum."""

    sampling: str
    inclusion_probability: float
    stratum: str


@dataclass
class HumanLabels:
    """People's value per labelled item (pairwise: their share for the chosen answer after aggregation; else the
    mean of their scores), the raters per item, the plan entries known, and notes for the report."""

    values: dict[str, float]
    raters: dict[str, int]
    plan: dict[str, PlanEntry]
    source: str
    aggregation: str
    notes: list[str] = field(default_factory=list)
    #: item -> rater -> value, each rater's own label before aggregation (what the alt-test compares)
    per_rater: dict[str, dict[str, float]] = field(default_factory=dict)


def _plan_entry(meta: Any, path: Path, line: int) -> PlanEntry | None:
    if not isinstance(meta, dict) or PLAN_KEY not in meta:
        return None
    block = meta[PLAN_KEY]
    where = f"meta.{PLAN_KEY}"
    if not isinstance(block, dict):
        raise DataError(path, line, where, "expected an object (sampling, inclusion_probability, stratum)")
    pi = block.get("inclusion_probability")
    if isinstance(pi, bool) or not isinstance(pi, int | float) or not 0.0 < float(pi) <= 1.0:
        raise DataError(path, line, f"{where}.inclusion_probability", f"expected a number in (0, 1], got {pi!r}")
    sampling, stratum = block.get("sampling"), block.get("stratum", "all")
    if sampling not in ("uniform", "stratified", "active"):
        raise DataError(path, line, f"{where}.sampling", f"expected uniform, stratified or active, got {sampling!r}")
    if not isinstance(stratum, str) or not stratum:
        raise DataError(path, line, f"{where}.stratum", f"expected a non-empty name, got {stratum!r}")
    return PlanEntry(sampling, float(pi), stratum)


def read_plan(path: str | Path) -> dict[str, PlanEntry]:
    """The plan entries of a sampling plan (`tailor estimate sample`'s PairCase JSONL, checked row by row as the
    annotation import checks it), by id; a row without an entry is an error naming its line."""
    from tailorbench.datasets.native import declared_names, read_native

    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file (a sampling plan: JSONL, one item per line)")
    splits, tiers = declared_names(path)
    for _ in read_native(path, InvalidRows(), splits, tiers):  # every row a whole PairCase, as the import reads it
        pass
    out: dict[str, PlanEntry] = {}
    for line, row in read_jsonl(path, InvalidRows()):
        item = row.get("id")
        if not isinstance(item, str) or not item:
            raise DataError(path, line, "id", "missing or not text")
        entry = _plan_entry(row.get("meta"), path, line)
        if entry is None:
            raise DataError(path, line, f"meta.{PLAN_KEY}", "missing: not an item of a sampling plan "
                                                            "(`tailor estimate sample` writes one)")
        out[item] = entry
    if not out:
        raise DataError(path, None, None, "the sampling plan has no items")
    return out


def _export_items(folder: Path) -> tuple[dict[str, PlanEntry], dict[str, str]]:
    """Plan entries and the answer people saw as `A` being the source's chosen one (`meta.source_chosen`)."""
    plan: dict[str, PlanEntry] = {}
    chosen_as: dict[str, str] = {}
    path = folder / "items.jsonl"
    for line, row in read_jsonl(path, InvalidRows()):
        item = row.get("id")
        if not isinstance(item, str):
            continue
        meta = row.get("meta")
        entry = _plan_entry(meta, path, line)
        if entry is not None:
            plan[item] = entry
        if isinstance(meta, dict) and meta.get("source_chosen") in ("A", "B"):
            chosen_as[item] = str(meta["source_chosen"])
    return plan, chosen_as


def _value(rating: Rating, pairwise: bool, chosen_as: str) -> float | None:
    """A rating as a number: pairwise 1 for the chosen answer, 0 for the rejected one; else its number or
    win / tie / loss. None: a label the estimate cannot read (counted in a note)."""
    label = rating.label
    if pairwise:
        word = _PAIRWISE.get(str(label).strip().lower()) if isinstance(label, str) else None
        if word in ("A", "B"):
            return 1.0 if word == chosen_as else 0.0
        if word is not None:
            return 1.0 if word == "chosen" else 0.0
        return None
    if isinstance(label, bool):
        return float(label)
    if isinstance(label, int):
        return float(label)
    return _OUTCOME.get(label.strip().lower())


def _aggregate(values: list[float], pairwise: bool) -> float:
    if not pairwise:
        return sum(values) / len(values)
    chosen = sum(1 for v in values if v == 1.0)
    rejected = len(values) - chosen
    return 1.0 if chosen > rejected else 0.0 if rejected > chosen else 0.5


def read_labels(source: str | Path, pairwise: bool, known: set[str], plan_file: str | Path | None = None,
                plan_entries: dict[str, PlanEntry] | None = None) -> HumanLabels:
    """People's labels from `source` (an export folder, a ratings file, or `benchmark` with `plan_file`), on the
    items in `known` (the runs' cases; ratings of other items are counted in a note), with the plan entries of
    `plan_file` (or `plan_entries`, a caller's own plan: a study that drew the items itself) or, for an export,
    of its items."""
    plan = read_plan(plan_file) if plan_file is not None else dict(plan_entries or {})
    notes: list[str] = []
    if str(source) == BENCHMARK:
        if not plan:
            raise ConfigError("--labels benchmark reveals the benchmark's own labels on a sample: name the sample "
                              "with --sample PLAN (`tailor estimate sample` writes one)")
        if not pairwise:
            raise ConfigError("--labels benchmark holds pairwise labels; a gen-eval run needs people's ratings")
        values = {item: 1.0 for item in plan if item in known}
        _note_unknown(len(plan) - len(values), notes)
        return HumanLabels(values, dict.fromkeys(values, 1), plan, "the benchmark's own labels (chosen = people's "
                           "majority) on the sampled items", "the benchmark's label", notes)
    path = Path(source)
    chosen_as: dict[str, str] = {}
    if path.is_dir():
        if not (path / "ratings.jsonl").is_file():
            raise DataError(path, None, None, "not an annotation export: ratings.jsonl is missing")
        export_plan, chosen_as = _export_items(path) if (path / "items.jsonl").is_file() else ({}, {})
        plan = plan or export_plan
        ratings = read_ratings_file(path / "ratings.jsonl")
        what = f"annotation export {path}"
    elif path.is_file():
        ratings = read_ratings_file(path)
        what = f"ratings file {path}"
    else:
        raise DataError(path, None, None, "no such file or folder (an annotation export, a ratings file, or "
                                          "`benchmark`)")
    per_item: dict[str, list[float]] = defaultdict(list)
    per_rater: dict[str, dict[str, float]] = defaultdict(dict)
    unread: Counter[str] = Counter()
    others = 0
    for rating in ratings.ratings:
        if rating.group != DEFAULT_GROUP:
            others += 1
            continue
        value = _value(rating, pairwise, chosen_as.get(rating.item, "A"))
        if value is None:
            unread[str(rating.label)] += 1
            continue
        per_item[rating.item].append(value)
        per_rater[rating.item][rating.rater] = value
    if others:
        notes.append(f"{others} rating(s) outside the human group left out")
    if unread:
        shown = ", ".join(f"{label!r} x{n}" for label, n in unread.most_common(5))
        notes.append(f"{sum(unread.values())} rating(s) with a label the estimate does not read: {shown}")
    values = {item: _aggregate(v, pairwise) for item, v in per_item.items() if item in known}
    _note_unknown(len(per_item) - len(values), notes)
    if not values:
        raise DataError(path, None, None, "no human label of a case of the runs (items are case ids; pairwise "
                                          "labels are A = the chosen answer, B, chosen or rejected)")
    aggregation = ("majority of the raters per item (a tie counts 1/2)" if pairwise
                   else "mean of the raters' scores per item (win 1, tie 1/2, loss 0)")
    return HumanLabels(values, {item: len(per_item[item]) for item in values}, plan, what, aggregation, notes,
                       {item: per_rater[item] for item in values})


def _note_unknown(n: int, notes: list[str]) -> None:
    if n:
        notes.append(f"{n} labelled item(s) are not cases of the runs: left out")
