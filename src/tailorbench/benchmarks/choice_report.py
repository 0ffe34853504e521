"""Reports of multiple-choice runs: one table per run (overall, per split, per tier, with 95% bootstrap CIs, the
answered / invalid / failed counts and chance) and, for several runs, one leaderboard row each; registered as the
`multiple-choice` run kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tailorbench.benchmarks.choice_results import KIND, compute_results
from tailorbench.benchmarks.run_pages import Runs, Table, benchmark_kind
from tailorbench.reporting import with_ci
from tailorbench.run_kinds import RUN_KINDS

HEADER = ["cell", "items", "accuracy [95% CI]", "answered", "no valid pick", "failed", "chance"]


def _row(label: str, cell: Mapping[str, Any]) -> list[str]:
    chance = cell.get("chance")
    return [label, str(cell["n"]), with_ci(cell["accuracy"], cell["ci"]), str(cell["answered"]),
            str(cell["invalid"]), str(cell["failed"]), "–" if chance is None else f"{chance:.3f}"]


def tables(runs: Runs) -> list[Table]:
    """(title, header, rows): a leaderboard of several runs, then each run's cells."""
    out: list[Table] = []
    if len(runs) > 1:
        out.append(("Runs", ["run", "benchmark", "model", "items", "accuracy [95% CI]"],
                    [[r.get("run", ""), r["benchmark"], r["model"], str(r["overall"]["n"]),
                      with_ci(r["overall"]["accuracy"], r["overall"]["ci"])] for r in runs]))
    for run in runs:
        rows = [_row("all", run["overall"])]
        rows += [_row(f"split {name}", cell) for name, cell in run["by_split"].items()]
        rows += [_row(f"tier {name}", cell) for name, cell in run["by_tier"].items()]
        rows += [_row(name, cell) for name, cell in run["by_split_tier"].items()]
        out.append((f"{run['benchmark']} · {run['model']} ({run.get('run', '')})", HEADER, rows))
    return out


def title(runs: Runs) -> str:
    return f"{runs[0]['benchmark']}: {runs[0]['model']}" if runs else "multiple-choice run"


#: `run_choice` runs: how `report`, `view` and the API read them (the registry's lazy table names this module)
MULTIPLE_CHOICE = RUN_KINDS.register(KIND)(benchmark_kind(
    compute_results, tables, "Accuracy over the answered items, scored by each benchmark's own rule (an answer "
    "without a valid pick is wrong, a failed call is counted apart).", title, "Multiple-choice runs"))
