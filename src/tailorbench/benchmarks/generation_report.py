"""Results and reports of PrefEval generation runs (run kind `prefeval-generation`): `analyze_errors`'s counts and
the preference-following accuracy with a bootstrap interval, overall, per form and per filler-turn count,
recomputed from the manifest and predictions alone; registered as a `RunKind`, so `tailor report` and the viewer
read these runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tailorbench.benchmarks.run_pages import Runs, Table, benchmark_kind
from tailorbench.benchmarks.scoring import GenerationScore, generation_summary
from tailorbench.bootstrap import bootstrap_ci, seed_for
from tailorbench.failures import first_causes
from tailorbench.reporting import pct, with_ci
from tailorbench.run_kinds import RUN_KINDS

KIND = "prefeval-generation"
HEADER = ["cell", "items", "preference following [95% CI]", "unhelpful", "inconsistent",
          "hallucinated violation", "unaware violation", "failed"]


def _cell(rows: Sequence[dict[str, Any]], label: str, n_boot: int, seed: int) -> dict[str, Any]:
    scored = [r for r in rows if r["status"] == "ok"]
    summary = generation_summary(GenerationScore(**r["scores"]) for r in scored)
    values = np.array([float(r["scores"]["preference_adherence_accuracy"]) for r in scored])
    ci = list(bootstrap_ci(values, n_boot=n_boot, seed=seed_for(seed, label))) if len(values) else [None, None]
    return {**summary, "ci": ci, "n": len(rows), "failed": len(rows) - len(scored)}


def compute_generation_results(manifest: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The script's counts and preference-following accuracy overall, per form and per filler-turn count."""
    config, names = manifest["config"], manifest["data_stats"]
    n_boot, seed = int(config["n_boot"]), int(config["seed"])
    return {
        "kind": KIND, "model": config["model"], "judge": config["judge"], "data": config["data"],
        "overall": _cell(rows, "all", n_boot, seed),
        "first_errors": first_causes(r.get("error") for r in rows if r["status"] == "failed"),
        "by_split": {s: _cell([r for r in rows if r["split"] == s], s, n_boot, seed) for s in names["splits"]},
        "by_tier": {t: _cell([r for r in rows if r["tier"] == t], t, n_boot, seed) for t in names["tiers"]},
    }


def _row(label: str, cell: Mapping[str, Any]) -> list[str]:
    return [label, str(cell["n"]), with_ci(cell["preference_following_accuracy"] if cell["total"] else None,
                                           cell["ci"]),
            *(pct(cell[k] / cell["total"]) if cell["total"] else "–" for k in (
                "error_unhelpful", "error_inconsistent", "hallucination_of_preference_violation",
                "preference_unaware_violation")), str(cell["failed"])]


def tables(runs: Runs) -> list[Table]:
    out: list[Table] = []
    for run in runs:
        rows = [_row("all", run["overall"])]
        rows += [_row(f"form {name}", cell) for name, cell in run["by_split"].items()]
        rows += [_row(f"turns {name}", cell) for name, cell in run["by_tier"].items()]
        out.append((f"{run['model']} judged by {run['judge']} ({run.get('run', '')})", HEADER, rows))
    return out


PREFEVAL_GENERATION = RUN_KINDS.register(KIND)(benchmark_kind(
    compute_generation_results, tables, "PrefEval's generation task: error types in % of the checked answers, "
    "preference following as analyze_errors counts it.", lambda runs: f"PrefEval generation: {runs[0]['model']}",
    "PrefEval generation runs"))
