"""How far a judge's verdicts can be trusted beyond its accuracy: position and length bias, calibration, and the
shares of verdicts that are not verdicts, per split x tier (docs/metrics.md, "Reliability").

Every figure is computed from predictions.jsonl alone. A case weighs 1 in every share (the mean over its valid
verdicts first), so a case judged in both orders counts as much as one judged once, and the intervals resample
cases (`bootstrap.bootstrap_ci`, seeded per cell like the accuracy's). Calibration needs a probability: the judge
says how its scores make one (its description's `probability`, see `PROBABILITY_RULES`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tailorbench.bootstrap import N_BOOT, bootstrap_ci, seed_for
from tailorbench.errors import ConfigError
from tailorbench.evaluate.columns import CHOICE_CODES, STATUS_CODES, Columns, columns
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, in_declared_order

#: how a judge's `scores` {A, B} become P(A is the better answer), by the name its description gives
PROBABILITY_RULES = {
    "softmax": "label log-probabilities: P(A) = exp(a) / (exp(a) + exp(b))",
    "logistic": "reward-model scores: P(A) = 1 / (1 + exp(-(a - b)))",
    "margin": "cosine similarities: P(A) = (1 + a - b) / 2, clipped to [0, 1] (uncalibrated by construction)",
}
#: equal-mass bins of the expected calibration error
ECE_BINS = 10



@dataclass
class Verdicts:
    """One row per verdict line, with the index of its case (cases in order of their first verdict)."""

    case: np.ndarray  # int: case index of each verdict
    n_cases: int
    split: np.ndarray  # per case
    tier: np.ndarray  # per case
    valid: np.ndarray  # bool: status ok and an answer picked
    first: np.ndarray  # bool: the position shown first (A) was picked
    correct: np.ndarray  # bool
    picked_longer: np.ndarray  # float: 1 the longer answer picked, 0 the shorter, nan equal lengths
    status: np.ndarray  # int8: STATUS_CODES
    p_chosen: np.ndarray  # float: P(the human-preferred answer is better), nan without a probability
    length_sign: np.ndarray  # per case: +1 the human-preferred answer is the longer, -1 the shorter, 0 equal


def probability_a(scores: Any, rule: str) -> float | None:
    """P(A is the better answer) from a verdict's scores by `rule` (a key of PROBABILITY_RULES)."""
    if not isinstance(scores, Mapping):
        return None
    a, b = scores.get("A"), scores.get("B")
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return None
    if rule == "softmax":
        top = max(a, b)
        ea, eb = np.exp(a - top), np.exp(b - top)
        return float(ea / (ea + eb))
    if rule == "logistic":
        return float(1.0 / (1.0 + np.exp(-(a - b))))
    if rule == "margin":
        return float(min(1.0, max(0.0, (1.0 + a - b) / 2.0)))
    raise ConfigError(f"unknown probability rule {rule!r} (known: {', '.join(PROBABILITY_RULES)})")


def verdicts(predictions: Sequence[Mapping[str, Any]], rule: str | None, cols: Columns | None = None) -> Verdicts:
    """The verdict arrays of a run; `rule` None: the judge yields no probability. `cols`: the lines'
    `columns`, when already read (the metrics read them too)."""
    n = len(predictions)
    if not n:
        empty = np.zeros(0)
        return Verdicts(np.zeros(0, np.int64), 0, empty.astype(object), empty.astype(object), empty.astype(bool),
                        empty.astype(bool), empty.astype(bool), empty, empty.astype(np.int8), empty,
                        np.zeros(0, np.int64))
    c = cols if cols is not None else columns(predictions)
    valid = (c.status == STATUS_CODES["ok"]) & (c.choice > 0)
    sign = np.sign(c.len_chosen - c.len_rejected)
    picked_longer = np.where(sign == 0, np.nan, ((sign > 0) == c.correct).astype(float))
    p_chosen = np.full(n, np.nan)
    if rule is not None:
        for k, row in enumerate(predictions):
            p = probability_a(row.get("scores"), rule) if valid[k] else None
            if p is not None:
                p_chosen[k] = p if row["order"] == "AB" else 1.0 - p
    return Verdicts(case=c.case, n_cases=c.n_cases, split=c.per_case("split"), tier=c.per_case("tier"),
                    valid=valid, first=valid & (c.choice == CHOICE_CODES["A"]), correct=c.correct,
                    picked_longer=picked_longer, status=c.status, p_chosen=p_chosen, length_sign=sign[c.firsts])


def _case_means(v: Verdicts, values: np.ndarray, use: np.ndarray) -> np.ndarray:
    """Per case, the mean of `values` over its verdicts where `use` holds (nan for a case with none)."""
    total = np.bincount(v.case, weights=np.where(use, values, 0.0), minlength=v.n_cases)
    count = np.bincount(v.case, weights=use.astype(float), minlength=v.n_cases)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _share(per_case: np.ndarray, mask: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    values = per_case[mask]
    values = values[np.isfinite(values)]
    if not len(values):
        return {"value": None, "ci": [None, None], "n": 0}
    lo, hi = bootstrap_ci(values, None, n_boot, seed)
    return {"value": float(values.mean()), "ci": [lo, hi], "n": len(values)}


def _binned(confidence: np.ndarray, right: np.ndarray, weights: np.ndarray, bins: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of `weights` (resamples x items, items sorted by confidence): each bin's total weight, weighted
    confidence and weighted correctness. Item i goes to bin floor(bins x (w_<i + w_i / 2) / W): with unit
    weights, floor(bins x (i + 1/2) / n), equal-mass bins."""
    total = weights.sum(axis=1, keepdims=True)
    middle = np.cumsum(weights, axis=1) - weights / 2.0
    which = np.minimum(bins - 1, np.floor(bins * middle / total).astype(np.int64))
    flat = (which + bins * np.arange(weights.shape[0])[:, None]).ravel()
    size = bins * weights.shape[0]
    sums = [np.bincount(flat, weights=(weights * x).ravel(), minlength=size).reshape(-1, bins)
            for x in (np.ones_like(confidence), confidence, right)]
    return sums[0], sums[1], sums[2]


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS,
                               weights: np.ndarray | None = None) -> np.ndarray:
    """ECE over `bins` equal-mass bins of the sorted confidences: sum over bins of (bin weight / W) x
    |accuracy - mean confidence| = sum over bins of |sum w x correct - sum w x confidence| / W. One value per
    row of `weights` (resamples x items; default: one row of ones)."""
    order = np.argsort(confidence, kind="stable")
    conf, right = confidence[order].astype(float), correct[order].astype(float)
    w = np.ones((1, len(conf))) if weights is None else weights[:, order]
    n, c, r = _binned(conf, right, w, bins)
    return np.asarray(np.abs(r - c).sum(axis=1) / n.sum(axis=1))


def reliability_bins(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> list[dict[str, Any]]:
    """The reliability diagram: per equal-mass bin, its size, mean confidence and accuracy."""
    order = np.argsort(confidence, kind="stable")
    n, c, r = _binned(confidence[order].astype(float), correct[order].astype(float), np.ones((1, len(order))), bins)
    return [{"n": int(k), "confidence": float(cc / k), "accuracy": float(rr / k)}
            for k, cc, rr in zip(n[0], c[0], r[0]) if k]


def _calibration(v: Verdicts, mask: np.ndarray, n_boot: int, seed: int) -> dict[str, Any] | None:
    in_cell = mask[v.case] & np.isfinite(v.p_chosen)
    if not in_cell.any():
        return None
    p = v.p_chosen[in_cell]
    confidence = np.maximum(p, 1.0 - p)
    right = (p > 0.5).astype(float)  # the answer the probability favours is the human-preferred one
    _, local = np.unique(v.case[in_cell], return_inverse=True)
    n_units = int(local.max()) + 1
    rng = np.random.default_rng(seed)
    boots = []
    for start in range(0, n_boot, 100):  # case multiplicities, 100 resamples at a time
        b = min(100, n_boot - start)
        drawn = rng.integers(0, n_units, (b, n_units)) + (np.arange(b) * n_units)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=b * n_units).reshape(b, n_units).astype(float)
        boots.append(expected_calibration_error(confidence, right, weights=counts[:, local]))
    lo, hi = np.quantile(np.concatenate(boots), [0.025, 0.975])
    return {"ece": float(expected_calibration_error(confidence, right)[0]), "ece_ci": [float(lo), float(hi)],
            "brier": float(np.mean((1.0 - p) ** 2)), "n": int(in_cell.sum()),
            "bins": reliability_bins(confidence, right)}


@dataclass
class PerCase:
    """What every cell reads, per case, computed once per run: a cell is then a mask and its bootstraps."""

    both: np.ndarray  # bool: two valid verdicts (both orders)
    right: np.ndarray  # float: valid correct verdicts
    accuracy: np.ndarray  # float: mean correctness over its verdicts
    p_first: np.ndarray  # float: share of its valid verdicts that picked the first shown (nan: none)
    p_longer: np.ndarray  # float: share of its valid verdicts that picked the longer (nan: none, or equal lengths)
    statuses: np.ndarray  # (cases, 5) verdict counts by status code + 1 (0: any other status)


def per_case(v: Verdicts) -> PerCase:
    counts = np.zeros((v.n_cases, len(STATUS_CODES) + 1))
    np.add.at(counts, (v.case, v.status.astype(np.int64) + 1), 1.0)
    longer = np.isfinite(v.picked_longer)
    return PerCase(
        both=np.bincount(v.case, weights=v.valid.astype(float), minlength=v.n_cases) == 2,
        right=np.bincount(v.case, weights=(v.valid & v.correct).astype(float), minlength=v.n_cases),
        accuracy=_case_means(v, v.correct.astype(float), np.ones(len(v.case), bool)),
        p_first=_case_means(v, v.first.astype(float), v.valid),
        p_longer=_case_means(v, np.nan_to_num(v.picked_longer), v.valid & longer),
        statuses=counts,
    )


def cell_reliability(v: Verdicts, mask: np.ndarray, label: str, n_boot: int = N_BOOT, seed: int = 0,
                     calibration: bool = True, cases: PerCase | None = None) -> dict[str, Any]:
    """Every reliability figure of one cell (`mask` over cases); `cases`: `per_case(v)`, when already known."""
    c = cases if cases is not None else per_case(v)
    pairs = mask & c.both
    flips = pairs & (c.right == 1)
    by_status = c.statuses[mask].sum(axis=0)
    n_verdicts = int(by_status.sum())
    shares = {name: (float(by_status[STATUS_CODES[status] + 1] / n_verdicts) if n_verdicts else None)
              for name, status in (("invalid", "invalid"), ("abstained", "abstain"), ("failed", "failed"))}
    split_by_length = {
        name: {"n": int(m.sum()), "accuracy": float(c.accuracy[m].mean()) if m.any() else None}
        for name, m in (("longer_is_right", mask & (v.length_sign > 0)),
                        ("shorter_is_right", mask & (v.length_sign < 0)))
    }
    cell = {
        "cases": int(mask.sum()),
        "verdicts": n_verdicts,
        "position": {
            "flip_rate": float(flips.sum() / pairs.sum()) if pairs.any() else None,
            "pairs": int(pairs.sum()),
            "p_first": _share(c.p_first, mask, n_boot, seed_for(seed, f"p_first/{label}")),
        },
        "length": {
            "p_longer": _share(c.p_longer, mask, n_boot, seed_for(seed, f"p_longer/{label}")),
            **split_by_length,
        },
        "shares": shares,
    }
    cell["calibration"] = _calibration(v, mask, n_boot, seed_for(seed, f"ece/{label}")) if calibration else None
    return cell


def reliability(predictions: Sequence[Mapping[str, Any]], rule: str | None, n_boot: int = N_BOOT, seed: int = 0,
                splits: Sequence[str] = DEFAULT_SPLITS, tiers: Sequence[str] = DEFAULT_TIERS,
                cols: Columns | None = None) -> dict[str, Any]:
    """The `reliability` block of results.json: per split x tier, per split and overall (the layout of
    `metrics`), plus the probability rule used (None: no calibration figures)."""
    v = verdicts(predictions, rule, cols)
    calibration = rule is not None
    cases = per_case(v)
    table: dict[str, Any] = {}
    for split in in_declared_order(splits, v.split.tolist()):
        in_split = v.split == split
        if not in_split.any():
            continue
        block = {}
        for tier in in_declared_order(tiers, v.tier[in_split].tolist()):
            cell = in_split & (v.tier == tier)
            if cell.any():
                block[tier] = cell_reliability(v, cell, f"{split}/{tier}", n_boot, seed, calibration, cases)
        block["all"] = cell_reliability(v, in_split, f"{split}/all", n_boot, seed, calibration, cases)
        table[split] = block
    table["all"] = cell_reliability(v, np.ones(v.n_cases, bool), "all", n_boot, seed, calibration, cases)
    return {"probability": rule, "probability_rule": PROBABILITY_RULES.get(rule or ""), "cells": table}


def judge_probability(description: Any) -> str | None:
    """The probability rule a judge's description names (None when it yields no probability)."""
    rule = description.get("probability") if isinstance(description, Mapping) else None
    return str(rule) if rule in PROBABILITY_RULES else None
