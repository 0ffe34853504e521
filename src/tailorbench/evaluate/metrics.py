"""Metrics of a pairwise run, computed from predictions alone (see docs/metrics.md).

Scoring rule: a case scores the mean over its judged orders of 1 if the verdict picks `chosen`, else 0;
abstentions, invalid verdicts and failed calls score 0 and are counted. CIs are percentile bootstraps over
cases (or over users, since cases cluster by user), seeded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tailorbench.bootstrap import N_BOOT, bootstrap_ci, seed_for
from tailorbench.evaluate.columns import STATUS_CODES, Columns, columns
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, in_declared_order

#: verdict statuses counted per case (an `ok` verdict is not a problem)
STATUS_COLUMNS = ("invalid", "abstain", "failed")
#: the classes of `datasets.pairs.tier_overlap`, in report order
OVERLAP_KINDS = ("unique", "repeated", "contradicted")


@dataclass
class CaseScores:
    """One row per case, built from its verdict lines."""

    ids: list[str]
    split: np.ndarray
    tier: np.ndarray
    user: np.ndarray
    score: np.ndarray  # mean correct over judged orders
    strict: np.ndarray  # right in every judged order
    both_ok: np.ndarray  # judged in two orders, both verdicts valid
    consistent: np.ndarray  # both_ok and the same answer picked twice
    length_sign: np.ndarray  # +1 chosen longer, -1 shorter, 0 equal
    statuses: np.ndarray  # per case: counts of STATUS_COLUMNS
    #: len(chosen) / len(rejected) in characters
    length_ratio: np.ndarray = field(default_factory=lambda: np.zeros(0))


def case_scores(predictions: Sequence[Mapping[str, Any]], cols: Columns | None = None) -> CaseScores:
    """Fold verdict lines (one per case x order) into per-case scores, vectorised; cases keep the order of
    their first verdict. `cols`: the lines' `columns`, when already read."""
    if not predictions:
        empty = np.array([], dtype=object)
        return CaseScores([], empty, empty, empty, np.zeros(0), np.zeros(0, bool), np.zeros(0, bool),
                          np.zeros(0, bool), np.zeros(0, np.int8), np.zeros((0, 3), np.int64))
    c = cols if cols is not None else columns(predictions)
    n, inv, firsts = c.n_cases, c.case, c.firsts
    per_case = np.bincount(inv, minlength=n)
    right = np.bincount(inv, weights=c.correct, minlength=n)
    ok = np.bincount(inv, weights=c.status == STATUS_CODES["ok"], minlength=n)
    statuses = np.stack([np.bincount(inv, weights=c.status == STATUS_CODES[s], minlength=n)
                         for s in STATUS_COLUMNS], 1)
    both_ok = (per_case == 2) & (ok == 2)
    len_c, len_r = c.len_chosen[firsts], c.len_rejected[firsts]
    return CaseScores(
        ids=[str(predictions[k]["case_id"]) for k in firsts],
        split=c.per_case("split"),
        tier=c.per_case("tier"),
        user=c.per_case("user_id"),
        score=right / per_case,
        strict=right == per_case,
        both_ok=both_ok,
        consistent=both_ok & ((right == 0) | (right == 2)),
        length_sign=np.sign(len_c - len_r).astype(np.int8),
        statuses=statuses.astype(np.int64),
        length_ratio=len_c / np.maximum(len_r, 1),
    )


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


def length_view(cs: CaseScores, mask: np.ndarray) -> dict[str, Any]:
    """Accuracy where chosen is the longer answer, where it is the shorter, and their mean."""
    longer = mask & (cs.length_sign > 0)
    shorter = mask & (cs.length_sign < 0)
    acc_longer, acc_shorter = _mean(cs.score[longer]), _mean(cs.score[shorter])
    balanced = None if acc_longer is None or acc_shorter is None else (acc_longer + acc_shorter) / 2
    return {
        "chosen_longer": {"n": int(longer.sum()), "accuracy": acc_longer},
        "chosen_shorter": {"n": int(shorter.sum()), "accuracy": acc_shorter},
        "equal_length": int((mask & (cs.length_sign == 0)).sum()),
        "balanced_accuracy": balanced,
    }


#: bins of len(chosen) / len(rejected) for `length_ratio_view`: (label, lower bound inclusive, upper exclusive)
LENGTH_RATIO_BINS: tuple[tuple[str, float, float], ...] = (
    ("< 0.5", 0.0, 0.5), ("0.5-0.8", 0.5, 0.8), ("0.8-1.25", 0.8, 1.25), ("1.25-2", 1.25, 2.0),
    (">= 2", 2.0, float("inf")),
)


def length_ratio_view(cs: CaseScores) -> list[dict[str, Any]]:
    """Accuracy by the length ratio len(chosen) / len(rejected), in LENGTH_RATIO_BINS (empty bins included with
    n 0): a judge that only reads length is near 0 on the left and near 1 on the right."""
    ratio = cs.length_ratio if len(cs.length_ratio) == len(cs.ids) else np.ones(len(cs.ids))
    out = []
    for label, lo, hi in LENGTH_RATIO_BINS:
        m = (ratio >= lo) & (ratio < hi)
        out.append({"bin": label, "lo": lo, "hi": None if hi == float("inf") else hi, "n": int(m.sum()),
                    "accuracy": _mean(cs.score[m])})
    return out


def overlap_view(cs: CaseScores, mask: np.ndarray, kinds: np.ndarray) -> dict[str, Any]:
    """Accuracy on the cell's cases unique to their tier, repeated by another tier, and contradicted by another
    tier (labels swapped: a judge that gives a pair one order is right on exactly one of its two rows), with
    the share where the chosen answer is the longer one."""
    out: dict[str, Any] = {}
    for k, kind in enumerate(OVERLAP_KINDS):
        m = mask & (kinds == k)
        if m.any():
            out[kind] = {"n": int(m.sum()), "accuracy": _mean(cs.score[m]),
                         "chosen_longer": _mean((cs.length_sign[m] > 0).astype(float))}
    return out


def cell_metrics(
    cs: CaseScores, mask: np.ndarray, label: str, ci_unit: str = "case", n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any]:
    """Every figure of one cell (a split x tier, a split, or everything)."""
    n = int(mask.sum())
    counts = dict(zip(STATUS_COLUMNS, cs.statuses[mask].sum(axis=0).tolist()))
    both = mask & cs.both_ok
    groups = cs.user[mask] if ci_unit == "user" else None
    ci = bootstrap_ci(cs.score[mask], groups, n_boot, seed_for(seed, label)) if n else (None, None)
    return {
        "n": n,
        "accuracy": _mean(cs.score[mask]),
        "correct": float(cs.score[mask].sum()),
        "ci": list(ci),
        "invalid": counts["invalid"],
        "abstained": counts["abstain"],
        "failed": counts["failed"],
        "strict_accuracy": _mean(cs.strict[mask].astype(float)),
        "consistency": _mean(cs.consistent[both].astype(float)),
        "n_consistency": int(both.sum()),
        "length": length_view(cs, mask),
    }


def _per_user(cs: CaseScores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user ids, score sums, case counts), vectorised."""
    users, inverse = np.unique(cs.user.astype(str), return_inverse=True)
    return users, np.bincount(inverse, weights=cs.score), np.bincount(inverse)


def user_breakdown(cs: CaseScores, min_cases: int = 3, hardest: int = 10) -> dict[str, Any]:
    """Per-user accuracy: its distribution and the hardest users (at least `min_cases` cases each)."""
    users, sums, counts = _per_user(cs)
    accs = sums / np.maximum(counts, 1)
    quantiles = (
        dict(zip(("min", "p10", "p25", "median", "p75", "p90", "max"),
                 (float(q) for q in np.quantile(accs, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]))))
        if len(accs) else {}
    )
    eligible = [(str(u), int(n), float(a)) for u, n, a in zip(users, counts, accs) if n >= min_cases]
    eligible.sort(key=lambda t: (t[2], -t[1], t[0]))
    return {
        "n_users": len(users),
        "quantiles": quantiles,
        "min_cases_for_hardest": min_cases,
        "hardest": [{"user_id": u, "n": n, "accuracy": a} for u, n, a in eligible[:hardest]],
    }


def attribute_breakdown(
    cs: CaseScores, user_attributes: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Accuracy by persona attribute value (nationality, age band, gender, MBTI letters), case-weighted."""
    table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for user, total, count in zip(*_per_user(cs)):
        for attr, value in user_attributes.get(str(user), {}).items():
            cell = table[attr][value]
            cell[0] += float(total)
            cell[1] += float(count)
    return {
        attr: {
            value: {"n": int(n), "accuracy": total / n}
            for value, (total, n) in sorted(values.items(), key=lambda kv: (-kv[1][1], kv[0]))
        }
        for attr, values in sorted(table.items())
    }


def compute_metrics(
    predictions: Sequence[Mapping[str, Any]],
    ci_unit: str = "case",
    n_boot: int = N_BOOT,
    seed: int = 0,
    user_attributes: Mapping[str, Mapping[str, str]] | None = None,
    tier_overlap: Mapping[str, str] | None = None,
    splits: Sequence[str] = DEFAULT_SPLITS,
    tiers: Sequence[str] = DEFAULT_TIERS,
    cols: Columns | None = None,
) -> dict[str, Any]:
    """The `metrics` block of results.json plus breakdowns and usage totals, split x tier cells in the order the
    benchmark declares (`splits`, `tiers`; names it does not declare follow). With `tier_overlap` (case id ->
    repeated / contradicted) every split x tier cell also gets `by_overlap`. `cols`: the lines' `columns`, when
    already read (the reliability table reads them too)."""
    cs = case_scores(predictions, cols)
    kinds = None
    if tier_overlap:  # as small integer codes: a cell's masks are then vectorised comparisons
        code = {kind: k for k, kind in enumerate(OVERLAP_KINDS)}
        kinds = np.fromiter((code[tier_overlap.get(i, "unique")] for i in cs.ids), np.int8, len(cs.ids))
    everything = np.ones(len(cs.ids), dtype=bool)
    metrics: dict[str, Any] = {}
    for split in in_declared_order(splits, cs.split.tolist()):
        in_split = cs.split == split
        if not in_split.any():
            continue
        block: dict[str, Any] = {}
        for tier in in_declared_order(tiers, cs.tier[in_split].tolist()):
            mask = in_split & (cs.tier == tier)
            if mask.any():
                block[tier] = cell_metrics(cs, mask, f"{split}/{tier}", ci_unit, n_boot, seed)
                if kinds is not None:
                    block[tier]["by_overlap"] = overlap_view(cs, mask, kinds)
        block["all"] = cell_metrics(cs, in_split, f"{split}/all", ci_unit, n_boot, seed)
        metrics[split] = block
    metrics["all"] = cell_metrics(cs, everything, "all", ci_unit, n_boot, seed)
    costs = [r["cost_usd"] for r in predictions if r.get("cost_usd") is not None]
    return {
        "metrics": metrics,
        "users": user_breakdown(cs),
        "attributes": attribute_breakdown(cs, user_attributes or {}),
        "by_length_ratio": length_ratio_view(cs),
        "verdicts": {
            "total": len(predictions),
            "cached": sum(1 for r in predictions if r.get("cached")),
            "truncated": sum(1 for r in predictions if r.get("truncated")),
        },
        "usage": {
            "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in predictions),
            "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in predictions),
            "cost_usd": float(sum(costs)) if costs else None,
        },
    }


def report_names(runs: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The splits and tiers a report over `runs` lays its tables out by: what their data declares (results
    `benchmark_names`; PersonaFeedback's when absent), in order, then any other name their metrics hold."""
    splits: list[str] = []
    tiers: list[str] = []
    for run in runs:
        names = run.get("benchmark_names") or {}
        splits = in_declared_order(splits, names.get("splits") or DEFAULT_SPLITS)
        tiers = in_declared_order(tiers, names.get("tiers") or DEFAULT_TIERS)
    for run in runs:
        blocks = {k: v for k, v in (run.get("metrics") or {}).items() if k != "all" and isinstance(v, dict)}
        splits = in_declared_order(splits, blocks)
        tiers = in_declared_order(tiers, (t for block in blocks.values() for t in block if t != "all"))
    return splits, tiers
