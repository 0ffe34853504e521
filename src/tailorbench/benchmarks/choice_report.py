"""Reports of multiple-choice runs: one table per run (overall, per split, per tier, with 95% bootstrap CIs, the
answered / invalid / failed counts and chance), its per-topic table and, for PersonaMem, accuracy by the
reference's distance; the protocol that made each run and how it differs from the authors'; for several runs,
one leaderboard row each; registered as the `multiple-choice` run kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tailorbench.benchmarks.choice_results import KIND, compute_results
from tailorbench.benchmarks.protocols import describe
from tailorbench.benchmarks.run_pages import Runs, Table, benchmark_kind
from tailorbench.reporting import f3, with_ci
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
        out.append(("Runs", ["run", "benchmark", "model", "protocol", "items", "accuracy [95% CI]"],
                    [[r.get("run", ""), r["benchmark"], r["model"], _protocol_name(r), str(r["overall"]["n"]),
                      with_ci(r["overall"]["accuracy"], r["overall"]["ci"])] for r in runs]))
    for run in runs:
        name = f"{run['benchmark']} · {run['model']} ({run.get('run', '')})"
        out.append((f"{name}: protocol", ["protocol", "how it was made"],
                    [[_protocol_name(run), describe(run.get("protocol") or {})], *_think_rows(run)]))
        out.append((name, HEADER, [_row("all", run["overall"]),
                                   *(_row(label, cell) for label, cell in _breakdown(run))]))
        if run.get("by_topic"):
            out.append((f"{name}: per topic", ["topic", *HEADER[1:]],
                        [_row(t, cell) for t, cell in run["by_topic"].items()]))
        if run.get("by_distance"):
            out.append((f"{name}: by the reference's distance (blocks)", ["distance", *HEADER[1:]],
                        [_row(d, cell) for d, cell in run["by_distance"].items()]))
    return out


def _protocol_name(run: Mapping[str, Any]) -> str:
    rec = run.get("protocol") or {}
    version = f" (scorer {rec['scorer_version']})" if rec.get("scorer_version") else ""
    return f"{rec.get('name', 'default')}{version}"


def _think_rows(run: Mapping[str, Any]) -> list[list[str]]:
    """The think-stripped reading beside the raw one, where a reasoning block changed any outcome."""
    think = run.get("think_stripped") or {}
    if not think.get("changed"):
        return []
    acc = think.get("accuracy_stripped")
    return [["reasoning blocks", f"{think['changed']} item(s) read otherwise without their <think> block: "
             f"{think['correct_stripped']} right without it vs {think['correct_raw']} as written (the figure "
             f"above); accuracy without it {'–' if acc is None else f3(acc)}"]]


def _versus_chance(cell: Mapping[str, Any]) -> str:
    lo, hi = cell["ci"]
    if lo is None or cell.get("chance") is None:
        return "no interval"
    if lo > cell["chance"]:
        return "above chance"
    if hi < cell["chance"]:
        return "below chance"
    return "not distinguishable from chance"


def _breakdown(run: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(row label, cell) of a run's table below `all`: per split, per tier and per split x tier, leaving out the
    rows that would repeat another on the same items with another bootstrap draw (one split: its row is `all`;
    one tier: its row is `all` and each split x tier the split's; either one: each split x tier is a split's or a
    tier's row)."""
    splits, tiers = run["by_split"], run["by_tier"]
    return [*((f"split {k}", c) for k, c in splits.items() if len(splits) > 1),
            *((f"tier {k}", c) for k, c in tiers.items() if len(tiers) > 1),
            *(run["by_split_tier"].items() if len(splits) > 1 and len(tiers) > 1 else ())]


def _cells(run: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(row label, cell) of a run's table and its per-topic and per-distance tables, as they label them."""
    return [*_breakdown(run), *(run.get("by_topic") or {}).items(), *(run.get("by_distance") or {}).items()]


def headline(runs: Runs) -> list[str]:
    """What a multiple-choice report opens with (docs/benchmarks.md, "Headline"): the best run's accuracy with its
    95% CI, chance and items, each run against chance (the mean of 1 / options), and every figure whose whole CI
    lies below chance; each number is one of the tables'."""
    answered = [r for r in runs if r["overall"]["accuracy"] is not None]
    if not answered:
        return ["No run has an answered item: no accuracy to report (see the failed counts)."]
    best = max(answered, key=lambda r: r["overall"]["accuracy"])
    total = best["overall"]
    lines = [f"Best: `{best['benchmark']} · {best['model']}`, accuracy {with_ci(total['accuracy'], total['ci'])} "
             f"(95% CI) on {total['n']} items; chance {total['chance']:.3f}."]
    groups: dict[str, list[str]] = {}
    for r in answered:
        groups.setdefault(_versus_chance(r["overall"]), []).append(
            f"`{r['benchmark']} · {r['model']}` {with_ci(r['overall']['accuracy'], r['overall']['ci'])}")
    lines.append("Against chance (the mean over items of 1 / options; 95% bootstrap CI over items): "
                 + "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items()) + ".")
    below = [f"`{r['benchmark']} · {r['model']}` on {label} {with_ci(c['accuracy'], c['ci'])} (chance "
             f"{c['chance']:.3f})" for r in answered for label, c in _cells(r) if _versus_chance(c) == "below chance"]
    lines.append("**Chance**: " + ("figures whose whole 95% CI lies below chance: " + "; ".join(below) if below
                                   else "no figure whose whole 95% CI lies below chance") + ".")
    return lines


def title(runs: Runs) -> str:
    return f"{runs[0]['benchmark']}: {runs[0]['model']}" if runs else "multiple-choice run"


#: `run_choice` runs: how `report`, `view` and the API read them (the registry's lazy table names this module)
MULTIPLE_CHOICE = RUN_KINDS.register(KIND)(benchmark_kind(
    compute_results, tables, "Accuracy over the answered items, scored by each benchmark's own rule (an answer "
    "without a valid pick is wrong, a failed call is counted apart).", title, "Multiple-choice runs", headline))
