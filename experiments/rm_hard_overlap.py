"""Where the hard tier's cases come from, and what a per-answer scorer can do with them.

The release's hard file shares most of its pairs with the other tiers: a hard case is *repeated* when the same
user, question and answers appear in the easy or medium file with the same label, *contradicted* when they
appear there with the labels swapped, and *unique* otherwise. A score model gives a pair one order, so on a
contradicted pair it is right in exactly one of the two tiers (the classes are `tier_overlap`, which
`tailor data check` counts): what it gains there on hard it loses on easy or medium. This script scores a
recipe (`rm_cv.py`'s product code path: same features, cleaning, fit) on unseen users and splits every tier's
accuracy, and `longer`'s, by those classes:

* on the config's own held-out split (`eval_fraction` 0.2, seed 0: the 17 users of the shipped command);
* cross-fitted over every user (5 user folds x seeds 0/1/2, as in rm_cv.py).

It also screens the flip rules (`clean_pairs`: which label of a pair released with both the training side
keeps) and loss weights on the hard tier's training pairs. Uses rm_cv.py's MiniLM feature cache (runs/rm-cv;
built when missing, 2.5-5 minutes).

    .venv/bin/python experiments/rm_hard_overlap.py [--data ../shared/data/personafeedback-general-dev]
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from rm_cv import RECIPES, Recipe, fit_fold, longer_margin, screen_inputs, screen_parser

from tailorbench.schema import DEFAULT_TIERS as TIERS
from tailorbench.schema import PairCase
from tailorbench.train import tier_overlap

SHIPPED = "length+overlap+cosine+ngrams 1-3, l2 0.01"
CLASSES = ("unique", "repeated", "contradicted")


def table(held: list[PairCase], margins: np.ndarray, kind: Mapping[str, str]) -> dict[str, dict[str, list[int]]]:
    """tier -> class -> [cases, rm right, longer right, cases where the chosen answer is longer, rm right on
    those, cases where it is shorter, rm right on those] (a tie is wrong for both; equal lengths count in
    neither length group, as in the product's length-balanced accuracy)."""
    longer = longer_margin(held)
    out: dict[str, dict[str, list[int]]] = {t: {k: [0] * 7 for k in (*CLASSES, "all")} for t in TIERS}
    for c, m, lo in zip(held, margins, longer):
        for k in (kind[c.id], "all"):
            cell = out[c.tier][k]
            right = int(m > 0)
            cell[0] += 1
            cell[1] += right
            cell[2] += int(lo > 0)
            if lo:
                group = 3 if lo > 0 else 5
                cell[group] += 1
                cell[group + 1] += right
    return out


def add(into: dict[str, dict[str, list[int]]], other: dict[str, dict[str, list[int]]]) -> None:
    for t, row in other.items():
        for k, cell in row.items():
            into[t][k] = [a + b for a, b in zip(into[t][k], cell)]


def render(title: str, counts: dict[str, dict[str, list[int]]], seeds: int = 1) -> list[str]:
    lines = [f"{title}", "", "| tier | class | cases | rm | `longer` | rm − `longer` | rm length-balanced |",
             "|---|---|---|---|---|---|---|"]
    for t in TIERS:
        for k in (*CLASSES, "all"):
            n, rm, lo, n_long, rm_long, n_short, rm_short = (v / seeds for v in counts[t][k])
            if n:
                balanced = f"{(rm_long / n_long + rm_short / n_short) / 2:.3f}" if n_long and n_short else "-"
                lines.append(f"| {t} | {k} | {n:.0f} | {100 * rm / n:.1f} ({rm:.0f}) | {100 * lo / n:.1f} ({lo:.0f}) | "
                             f"{100 * (rm - lo) / n:+.1f} | {balanced} |")
    return lines


def main() -> None:
    parser = screen_parser(__doc__)
    parser.add_argument("--out", default="runs/rm-cv/hard_overlap.json")
    parser.add_argument("--only", nargs="*", help="variant names to run (default: all)")
    args = parser.parse_args()
    cases, feats = screen_inputs(args)
    kind = dict(zip([c.id for c in cases], tier_overlap(cases), strict=True))
    assert len(kind) == len(cases), "case ids must be unique"
    report: dict[str, Any] = {}
    lines: list[str] = []
    variants: dict[str, Recipe] = {f"flip_rule {rule}": replace(RECIPES[SHIPPED], flip_rule=rule)
                                   for rule in ("majority", "easier", "harder")}
    variants.update({f"hard pairs weighted x{w:g}": replace(RECIPES[SHIPPED], tier_weights=(("hard", w),))
                     for w in (2.0, 4.0)})
    for name, recipe in variants.items():
        if args.only and name not in args.only:
            continue
        tick, first = time.perf_counter(), len(lines)
        split = fit_fold(cases, feats, recipe, 1, 0, 0)
        counts = table(split.held, split.margins, kind)
        lines += [*render(f"{name}: the config's held-out split (seed 0, 20% of users)", counts), ""]
        pooled: dict[str, dict[str, list[int]]] = {t: {k: [0] * 7 for k in (*CLASSES, "all")} for t in TIERS}
        for seed in (0, 1, 2):
            for fold in range(5):
                fit = fit_fold(cases, feats, recipe, 5, fold, seed)
                add(pooled, table(fit.held, fit.margins, kind))
        lines += render(f"{name}: cross-fitted, 5 user folds x 3 seeds (mean over seeds)", pooled, 3)
        lines.append(f"({time.perf_counter() - tick:.0f} s)")
        lines.append("")
        report[name] = {"split": counts, "cross_fit": pooled}
        print("\n".join(lines[first:]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
