"""results.json of a multiple-choice run: accuracy over the answered items with seeded bootstrap intervals,
overall, per split, per tier and per split x tier, computed from the manifest and predictions alone (so
`tailor report` can always recompute it)."""

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
    }
