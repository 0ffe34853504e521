"""Metrics of a pairwise run, computed from predictions alone (see docs/metrics.md).

Scoring rule: a case scores the mean over its judged orders of 1 if the verdict picks `chosen`, else 0;
abstentions, invalid verdicts and failed calls score 0 and are counted. CIs are percentile bootstraps over
cases (or over users, since cases cluster by user), seeded.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tailorbench.schema import SPLITS, TIERS

N_BOOT = 1000


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
    statuses: list[dict[str, int]]


def case_scores(predictions: Iterable[Mapping[str, Any]]) -> CaseScores:
    """Fold verdict lines (one per case x order) into per-case scores."""
    by_case: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in predictions:
        by_case[row["case_id"]].append(row)
    ids = list(by_case)
    n = len(ids)
    split, tier, user = (np.empty(n, dtype=object) for _ in range(3))
    score, strict = np.zeros(n), np.zeros(n, dtype=bool)
    both_ok, consistent = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    length_sign = np.zeros(n, dtype=np.int8)
    statuses: list[dict[str, int]] = []
    for k, case_id in enumerate(ids):
        rows = by_case[case_id]
        first = rows[0]
        split[k], tier[k], user[k] = first["split"], first["tier"], first["user_id"]
        correct = [bool(r["correct"]) for r in rows]
        score[k] = sum(correct) / len(correct)
        strict[k] = all(correct)
        oks = [r for r in rows if r["status"] == "ok"]
        if len(rows) == 2 and len(oks) == 2:
            both_ok[k] = True
            consistent[k] = correct[0] == correct[1]
        length_sign[k] = int(np.sign(first["len_chosen"] - first["len_rejected"]))
        counts = {"invalid": 0, "abstain": 0, "failed": 0}
        for r in rows:
            if r["status"] in counts:
                counts[r["status"]] += 1
        statuses.append(counts)
    return CaseScores(ids, split, tier, user, score, strict, both_ok, consistent, length_sign, statuses)


def _seed_for(seed: int, label: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}\x1f{label}".encode(), digest_size=4).digest(), "big")


def bootstrap_ci(
    values: np.ndarray,
    groups: np.ndarray | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `values`; with `groups`, whole groups (users) are resampled
    and the statistic is the pooled mean of the resampled cases. Vectorised, in chunks to bound memory."""
    if len(values) == 0:
        return (float("nan"), float("nan"))
    if groups is None:
        sums, counts = values.astype(float), np.ones(len(values))
    else:
        _, inverse = np.unique(groups.astype(str), return_inverse=True)
        sums = np.bincount(inverse, weights=values.astype(float))
        counts = np.bincount(inverse).astype(float)
    rng = np.random.default_rng(seed)
    units = len(sums)
    stats = np.empty(n_boot)
    chunk = max(1, min(n_boot, 4_000_000 // max(units, 1)))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, units, size=(stop - start, units))
        stats[start:stop] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


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


def cell_metrics(
    cs: CaseScores, mask: np.ndarray, label: str, ci_unit: str = "case", n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any]:
    """Every figure of one cell (a split x tier, a split, or everything)."""
    n = int(mask.sum())
    counts = {"invalid": 0, "abstain": 0, "failed": 0}
    for k in np.flatnonzero(mask):
        for key, value in cs.statuses[k].items():
            counts[key] += value
    both = mask & cs.both_ok
    groups = cs.user[mask] if ci_unit == "user" else None
    ci = bootstrap_ci(cs.score[mask], groups, n_boot, _seed_for(seed, label)) if n else (None, None)
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


def user_breakdown(cs: CaseScores, min_cases: int = 3, hardest: int = 10) -> dict[str, Any]:
    """Per-user accuracy: its distribution and the hardest users (at least `min_cases` cases each)."""
    per: dict[str, list[float]] = defaultdict(list)
    for user, score in zip(cs.user, cs.score):
        per[str(user)].append(float(score))
    accs = np.array([np.mean(v) for v in per.values()]) if per else np.array([])
    quantiles = (
        dict(zip(("min", "p10", "p25", "median", "p75", "p90", "max"),
                 (float(q) for q in np.quantile(accs, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]))))
        if len(accs) else {}
    )
    eligible = [(u, len(v), float(np.mean(v))) for u, v in per.items() if len(v) >= min_cases]
    eligible.sort(key=lambda t: (t[2], -t[1], t[0]))
    return {
        "n_users": len(per),
        "quantiles": quantiles,
        "min_cases_for_hardest": min_cases,
        "hardest": [{"user_id": u, "n": n, "accuracy": a} for u, n, a in eligible[:hardest]],
    }


def attribute_breakdown(
    cs: CaseScores, user_attributes: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Accuracy by persona attribute value (nationality, age band, gender, MBTI letters)."""
    table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for user, score in zip(cs.user, cs.score):
        for attr, value in user_attributes.get(str(user), {}).items():
            table[attr][value].append(float(score))
    return {
        attr: {
            value: {"n": len(scores), "accuracy": float(np.mean(scores))}
            for value, scores in sorted(values.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        }
        for attr, values in sorted(table.items())
    }


def compute_metrics(
    predictions: Sequence[Mapping[str, Any]],
    ci_unit: str = "case",
    n_boot: int = N_BOOT,
    seed: int = 0,
    user_attributes: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """The `metrics` block of results.json plus breakdowns and usage totals."""
    cs = case_scores(predictions)
    everything = np.ones(len(cs.ids), dtype=bool)
    metrics: dict[str, Any] = {}
    for split in SPLITS:
        in_split = cs.split == split
        if not in_split.any():
            continue
        block: dict[str, Any] = {}
        for tier in TIERS:
            mask = in_split & (cs.tier == tier)
            if mask.any():
                block[tier] = cell_metrics(cs, mask, f"{split}/{tier}", ci_unit, n_boot, seed)
        block["all"] = cell_metrics(cs, in_split, f"{split}/all", ci_unit, n_boot, seed)
        metrics[split] = block
    metrics["all"] = cell_metrics(cs, everything, "all", ci_unit, n_boot, seed)
    costs = [r["cost_usd"] for r in predictions if r.get("cost_usd") is not None]
    return {
        "metrics": metrics,
        "users": user_breakdown(cs),
        "attributes": attribute_breakdown(cs, user_attributes or {}),
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


def paired_difference(
    a: Mapping[str, float], b: Mapping[str, float], n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any]:
    """Paired bootstrap of mean(a) - mean(b) over the cases both runs scored."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return {"n": 0, "difference": None, "ci": [None, None], "p_two_sided": None}
    diff = np.array([a[k] - b[k] for k in shared])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), size=(n_boot, len(diff)))
    boots = diff[idx].mean(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    p = 2 * min(float((boots <= 0).mean()), float((boots >= 0).mean()))
    return {
        "n": len(shared),
        "difference": float(diff.mean()),
        "ci": [float(lo), float(hi)],
        "p_two_sided": min(1.0, p),
        "a_better": int((diff > 0).sum()),
        "b_better": int((diff < 0).sum()),
    }
