"""The gen-eval report's headline (docs/generation.md, "Headline"): the best run's win rate with its 95% CI and its
length-controlled win rate, each run against parity with the reference (a win rate of 50%: the judge prefers
neither answer), every figure below parity, and a judge whose validation does not beat the `longer` baseline.
Every number is one of the report's Win rates tables (the test parses them), so nothing here is computed anew."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tailorbench.evaluate.metrics import report_names
from tailorbench.reporting import pct

#: a win rate at which the judge prefers neither the generated answer nor the reference
PARITY = 0.5


def rate_ci(value: float | None, ci: Sequence[float | None]) -> str:
    """A rate as every table of the report writes it: `62.5 [50.0, 75.0]` (in %), `–` without a value."""
    if value is None:
        return "–"
    lo, hi = ci
    return pct(value) + (f" [{pct(lo)}, {pct(hi)}]" if lo is not None else "")


def _cell(r: Mapping[str, Any], split: str, tier: str) -> Mapping[str, Any] | None:
    block = r["metrics"].get(split)
    cell = block.get(tier) if isinstance(block, dict) else None
    return cell if isinstance(cell, dict) else None


def repeats(r: Mapping[str, Any], split: str, tier: str) -> bool:
    """Whether a split x tier cell holds the same cases as the row above it, with another bootstrap draw: a split's
    only tier is the split's `all`, and the only split's `all` is the run's. Neither the tables nor the headline
    show such a cell."""
    if split == "all":
        return False
    splits, tiers = report_names([r])
    if tier == "all":
        return sum(1 for s in splits if _cell(r, s, "all")) == 1
    return sum(1 for t in tiers if _cell(r, split, t)) == 1


def _label(r: Mapping[str, Any]) -> str:
    return f"`{r['model']} vs {r['reference']} ({r['setting']})`"


def _verdict(cell: Mapping[str, Any]) -> str:
    lo, hi = cell["ci"]
    if lo is None:
        return "no interval"
    if lo > PARITY:
        return "beats the reference"
    if hi < PARITY:
        return "loses to the reference"
    return "not distinguishable from the reference"


def _below(runs: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """Overall win rates below parity, and the split x tier cells whose whole CI lies below it."""
    splits, tiers = report_names(runs)
    overall, cells = [], []
    for r in runs:
        total = r["metrics"]["all"]
        if total.get("win_rate") is not None and total["win_rate"] < PARITY:
            overall.append(f"{_label(r)} {rate_ci(total['win_rate'], total['ci'])}")
        for split in splits:
            for tier in (*tiers, "all"):
                cell = _cell(r, split, tier)
                hi = (cell or {}).get("ci", [None, None])[1]
                if cell and hi is not None and hi < PARITY and not repeats(r, split, tier):
                    cells.append(f"{_label(r)} on {split}/{tier} {rate_ci(cell['win_rate'], cell['ci'])}")
    return overall, cells


def _judges(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """A sentence per judge whose validation on the pairwise benchmark does not beat `longer`, or that has none."""
    out = []
    for judge in dict.fromkeys(str(r["judge"]) for r in runs):
        v = next((r.get("judge_validation") or {} for r in runs if r["judge"] == judge), {})
        if not v.get("source"):
            out.append(f"the judge `{judge}` was not validated on the pairwise benchmark: its win rates say what it "
                       "prefers, not what people prefer")
        elif v.get("accuracy") is not None and v.get("longer_accuracy") is not None and \
                v["accuracy"] <= v["longer_accuracy"]:
            out.append(f"the judge `{judge}` does not beat the `longer` baseline on the pairwise benchmark (Judge "
                       "validation): its win rates may reward length more than personalization")
    return out


def headline_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's first paragraphs: what the win rates say, each number from a Win rates table."""
    scored = [r for r in runs if r["metrics"]["all"].get("win_rate") is not None]
    lines = []
    if scored:
        best = max(scored, key=lambda r: r["metrics"]["all"]["win_rate"])
        total = best["metrics"]["all"]
        lines.append(f"Best: {_label(best)}, win rate {rate_ci(total['win_rate'], total['ci'])} (95% CI) on "
                     f"{total['n']} scored cases; length-controlled {rate_ci(total['lc_win_rate'], total['lc_ci'])}.")
        groups: dict[str, list[str]] = {}
        for r in scored:
            cell = r["metrics"]["all"]
            groups.setdefault(_verdict(cell), []).append(f"{_label(r)} {rate_ci(cell['win_rate'], cell['ci'])}")
        lines.append("Against the reference (parity: a win rate of 50%, the judge preferring neither answer; 95% "
                     "bootstrap CI over cases): " + "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())
                     + ".")
    else:
        lines.append("No run has a scored case: no win rate to report (see Accounting).")
    overall, cells = _below(runs)
    said = ["overall win rate below parity (50%): " + "; ".join(overall) if overall else
            "no overall win rate below parity (50%)",
            "split × tier win rates whose whole 95% CI lies below parity: " + "; ".join(cells) if cells else
            "no split × tier win rate whose whole 95% CI lies below parity"]
    lines.append(f"**Below parity**: {said[0]}; {said[1]}.")
    judges = _judges(runs)
    if judges:
        lines.append("**Judge**: " + "; ".join(judges) + ".")
    return lines
