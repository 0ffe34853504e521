"""The eval report's headline (docs/metrics.md, "Headline"): the best judge with its accuracy and 95% CI, for each
judge whether it beats the `longer` baseline (a paired difference on the same cases with a bootstrap CI) and
every figure below chance, each number also in the report's tables.

`vs_longer` is computed with the run's results (results.json `vs_longer`): the run's per-case scores minus the
`longer` baseline's on the same cases (1 where the chosen answer is the longer one, else 0: the
"picking the longer answer" figure of the Length-controlled view), its mean with a percentile bootstrap
interval over cases (seeded, the run's `n_boot`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tailorbench.bootstrap import paired_difference, seed_for
from tailorbench.evaluate.metrics import CaseScores
from tailorbench.evaluate.report_rows import column_name, format_cell, leaderboard_columns, result_cell, run_views
from tailorbench.reporting import Section, pct

#: the label the paired bootstrap's seed is derived from (`seed_for(seed, VS_LONGER_SEED)`): `tailor compare`'s
#: label of its overall cell, so `tailor compare RUN LONGER_RUN` (same `--n-boot`, `--seed`) prints this very interval
VS_LONGER_SEED = "all"

#: chance level of a two-answer pick
CHANCE = 0.5

HEADER = ["judge", "setting", "cases", "accuracy", "`longer` on the same cases", "difference (points)",
          "95% CI of the difference", "verdict"]


def vs_longer(cs: CaseScores, n_boot: int, seed: int,
              unseen: Callable[[str], bool] | None = None) -> dict[str, Any] | None:
    """The run's accuracy minus the `longer` baseline's on the run's judged cases, paired by case; for a judge
    trained on part of the data (`unseen` tells its unseen cases), on its unseen cases alone (`only: unseen`)."""
    keep = [k for k, case in enumerate(cs.ids) if unseen is None or unseen(case)]
    if not keep:
        return None
    ids = [cs.ids[k] for k in keep]
    score, baseline = cs.score[keep], (cs.length_sign[keep] > 0).astype(float)
    result = paired_difference(dict(zip(ids, score.tolist())), dict(zip(ids, baseline.tolist())),
                               n_boot=n_boot, seed=seed_for(seed, VS_LONGER_SEED))
    return {"n": result["n"], "accuracy": float(score.mean()), "baseline": float(baseline.mean()),
            "difference": result["difference"], "ci": result["ci"], "n_boot": n_boot,
            **({"only": "unseen"} if unseen is not None else {})}


def points(value: float | None) -> str:
    """A difference of two fractions in percentage points, signed (`+5.6`, `-2.0`, `0.0`)."""
    if value is None:
        return "–"
    text = f"{value * 100:+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text


def verdict(block: dict[str, Any]) -> str:
    lo, hi = block["ci"]
    if lo is None:
        return "–"
    if lo > 0:
        return "beats `longer`"
    if hi < 0:
        return "below `longer`"
    return "not distinguishable from `longer`"


def _setting(run: dict[str, Any]) -> str:
    """The run's setting as its leaderboard row names it (`persona | unseen` for a judge trained on part of the
    data, whose headline figures are those of its unseen cases)."""
    only = (run.get("vs_longer") or {}).get("only") or run.get("_class")
    return f"{run['setting']} | {only}" if only else str(run["setting"])


def _name(run: dict[str, Any]) -> str:
    return f"`{run['judge']} / {_setting(run)}`"


def _honest(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The figures the headline ranks: each run's, or for a judge trained on part of the data its unseen row."""
    out = []
    for source, _, kind in run_views(runs):
        if kind in (None, "unseen"):
            out.append({**source, "_class": kind})
    return out


def _rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in runs:
        block = r.get("vs_longer")
        if not block:
            continue
        rows.append([r["judge"], _setting(r), str(block["n"]), pct(block["accuracy"]), pct(block["baseline"]),
                     points(block["difference"]), f"[{points(block['ci'][0])}, {points(block['ci'][1])}]",
                     "the baseline itself" if r["judge"] == "longer" else verdict(block)])
    return rows


def _below_chance(runs: Sequence[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Overall figures below 50%, and the split x tier figures (the leaderboard's columns) whose whole CI lies
    below it."""
    columns = [(s, t) for s, t in leaderboard_columns(runs) if s != "all"]
    overall, cells = [], []
    for r in runs:
        total = r["metrics"]["all"]
        if total.get("accuracy") is not None and total["accuracy"] < CHANCE:
            overall.append(f"{_name(r)} {format_cell(total)}")
        for split, tier in columns:
            cell = result_cell(r, split, tier)
            hi = (cell or {}).get("ci", [None, None])[1]
            if cell and hi is not None and hi < CHANCE:
                cells.append(f"{_name(r)} on {column_name(split, tier)} {format_cell(cell)}")
    return overall, cells


def headline_section(runs: Sequence[dict[str, Any]], warning: str | None = None) -> Section:
    """The report's first section: what the figures say, each number from a table of the report."""
    honest = _honest(runs)
    ranked = [r for r in honest if r["metrics"]["all"].get("accuracy") is not None]
    sentences: list[str] = []
    if warning:
        sentences.append(f"**Warning**: {warning}.")
    if ranked:
        best_acc = max(r["metrics"]["all"]["accuracy"] for r in ranked)
        best = [r for r in ranked if pct(r["metrics"]["all"]["accuracy"]) == pct(best_acc)]
        total = best[0]["metrics"]["all"]
        tied = f" (tied with {', '.join(_name(r) for r in best[1:])})" if len(best) > 1 else ""
        sentences.append(f"Best judge: {_name(best[0])}{tied}, accuracy {format_cell(total)} (95% CI) on "
                         f"{total['n']} cases.")
    compared = [r for r in runs if r.get("vs_longer") and r["judge"] != "longer"]
    if compared:
        groups: dict[str, list[str]] = {}
        for r in compared:
            block = r["vs_longer"]
            groups.setdefault(verdict(block), []).append(
                f"{_name(r)} {points(block['difference'])} [{points(block['ci'][0])}, {points(block['ci'][1])}]")
        said = "; ".join(f"{kind}: {', '.join(items)}" for kind, items in groups.items())
        boots = {r["vs_longer"]["n_boot"] for r in compared}
        n_boot = f"{boots.pop()} resamples" if len(boots) == 1 else "each run's resamples"
        sentences.append(f"Against the `longer` baseline (points of accuracy, paired on the same cases, 95% "
                         f"bootstrap CI over cases, {n_boot}): {said}.")
    missing = [_name(r) for r in runs if not r.get("vs_longer") and r["judge"] != "longer"]
    if missing:
        sentences.append(f"No paired difference with the `longer` baseline for {', '.join(missing)} (no judged "
                         "case, or a results.json written before the difference was computed).")
    overall, cells = _below_chance(honest)
    chance = ["overall accuracy below chance (50%): " + "; ".join(overall) if overall else
              "no overall accuracy below chance (50%)",
              "split × tier figures whose whole 95% CI lies below chance: " + "; ".join(cells) if cells else
              "no split × tier figure whose whole 95% CI lies below chance"]
    sentences.append(f"**Chance**: {chance[0]}; {chance[1]}.")
    notes = ["*`longer` on the same cases*: the accuracy of picking the longer answer (1 where the chosen "
             "answer is the longer one, else 0) on the judge's judged cases, the Length-controlled view's baseline; "
             "*difference*: the judge's accuracy minus it, in points, with a percentile bootstrap CI resampling "
             "cases (paired); *beats* / *below*: the whole CI above / below 0. Definitions: "
             "[docs/metrics.md](docs/metrics.md#headline)."]
    rows = _rows(runs)
    return Section("Headline", sentences, HEADER if rows else None, rows, notes if rows else [])
