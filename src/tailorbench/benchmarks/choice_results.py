"""results.json of a multiple-choice run: accuracy over the answered items with seeded bootstrap intervals,
overall, per split, per tier and per split x tier, per topic (PrefEval's unit of report; PersonaMem's topics)
and by the reference's distance in the history (PersonaMem's `distance_to_ref_in_blocks`), with the protocol
that made the run and the think-stripped reading where it changes an outcome; computed from the manifest and
predictions alone (so `tailor report` can always recompute it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tailorbench.bootstrap import bootstrap_ci, seed_for
from tailorbench.failures import first_causes

KIND = "multiple-choice"


def _cell(rows: Sequence[dict[str, Any]], label: str, n_boot: int, seed: int) -> dict[str, Any]:
    answered = [r for r in rows if r["status"] != "failed"]
    values = np.array([float(r["correct"]) for r in answered])
    accuracy = float(values.mean()) if len(values) else None
    ci = list(bootstrap_ci(values, n_boot=n_boot, seed=seed_for(seed, label))) if len(values) else [None, None]
    return {"n": len(rows), "answered": len(answered), "correct": int(values.sum()), "accuracy": accuracy,
            "ci": ci, "invalid": sum(r["status"] == "invalid" for r in rows),
            "failed": len(rows) - len(answered),
            "chance": float(np.mean([1 / r["n_options"] for r in rows])) if rows else None}


def _by_meta(rows: Sequence[dict[str, Any]], key: str, n_boot: int, seed: int) -> dict[str, Any]:
    """One cell per value of the item field `key` (numbers in numeric order, text in first-seen order)."""
    values: list[Any] = []
    for r in rows:
        v = r.get("meta", {}).get(key)
        if v is not None and v not in values:
            values.append(v)
    if all(isinstance(v, int | float) for v in values):
        values.sort()
    return {str(v): _cell([r for r in rows if r.get("meta", {}).get(key) == v], f"{key}={v}", n_boot, seed)
            for v in values}


def think_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The items whose outcome a reasoning block changes: scored on the raw reply (what counts) and without the
    block (`think_stripped`, reported beside it)."""
    changed = [r for r in rows if r.get("think_stripped")]
    correct_raw = sum(bool(r["correct"]) for r in rows if r["status"] != "failed")
    correct_stripped = correct_raw + sum(int(bool(r["think_stripped"]["correct"])) - int(bool(r["correct"]))
                                         for r in changed)
    answered = sum(r["status"] != "failed" for r in rows)
    return {"changed": len(changed), "correct_raw": correct_raw, "correct_stripped": correct_stripped,
            "accuracy_stripped": correct_stripped / answered if answered else None,
            "items": [r["item"] for r in changed][:20]}


def compute_results(manifest: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy over the answered items (a failed call is counted, not scored; an answer without a valid pick is
    wrong, as the authors count it), overall, per split, per tier and per split x tier, in declared order."""
    config, names = manifest["config"], manifest["data_stats"]
    n_boot, seed = int(config["n_boot"]), int(config["seed"])
    splits = [s for s in names["splits"] if any(r["split"] == s for r in rows)]
    tiers = [t for t in names["tiers"] if any(r["tier"] == t for r in rows)]
    return {
        "kind": KIND, "benchmark": names["layout"], "model": config["model"], "data": config["data"],
        "overall": _cell(rows, "all", n_boot, seed),
        "first_errors": first_causes(r.get("error") for r in rows if r["status"] == "failed"),
        "by_split": {s: _cell([r for r in rows if r["split"] == s], s, n_boot, seed) for s in splits},
        "by_tier": {t: _cell([r for r in rows if r["tier"] == t], t, n_boot, seed) for t in tiers},
        "by_split_tier": {f"{s}/{t}": _cell(cell, f"{s}/{t}", n_boot, seed) for s in splits for t in tiers
                          if (cell := [r for r in rows if r["split"] == s and r["tier"] == t])},
        "by_topic": _by_meta(rows, "topic", n_boot, seed),
        "by_distance": _by_meta(rows, "distance_to_ref_in_blocks", n_boot, seed),
        "protocol": manifest.get("protocol") or {"name": "default"},
        "think_stripped": think_summary(rows),
    }
