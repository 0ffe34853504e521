"""The SVG charts of the pairwise report: accuracy by split and tier with CI whiskers, and accuracy by length
ratio (drawn by `reporting.py`'s bar charts from the runs' results)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from tailorbench.evaluate.metrics import report_names
from tailorbench.evaluate.report_rows import format_cell, result_cell, run_views
from tailorbench.reporting import (
    colour,
    pct,
    svg_percent_grid,
    svg_whisker,
)


def svg_ratio_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Accuracy by length-ratio bin, one line per leaderboard row (counts are in the table)."""
    runs = [{**r, "setting": setting} for r, setting, _ in run_views(runs)]
    series = [(k, r) for k, r in enumerate(runs) if r.get("by_length_ratio")]
    if not series:
        return ""
    bins = [b["bin"] for b in series[0][1]["by_length_ratio"]]
    top, height, left, step = 20, 180, 40, 90
    width = left + step * len(bins) + 20
    legend = top + height + 34
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{legend + 16 * len(series)}" '
           'role="img"><title>accuracy by length ratio</title>']
    out.append(svg_percent_grid(left, width - 10, top, height))
    for k, label in enumerate(bins):
        out.append(f'<text x="{left + step * k + step / 2}" y="{top + height + 16}" font-size="11" '
                   f'text-anchor="middle">{html.escape(label)}</text>')
    for index, run in series:
        points = [(left + step * k + step / 2, top + height * (1 - c["accuracy"]), c)
                  for k, c in enumerate(run["by_length_ratio"]) if c["accuracy"] is not None]
        if len(points) > 1:
            path = " ".join(f"{'M' if j == 0 else 'L'}{x:.1f},{y:.1f}" for j, (x, y, _) in enumerate(points))
            out.append(f'<path d="{path}" fill="none" stroke="{colour(index)}" stroke-width="2"/>')
        for x, y, c in points:
            tip = html.escape(f"{run['judge']} / {run['setting']} {c['bin']}: {pct(c['accuracy'])} (n={c['n']})")
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour(index)}"><title>{tip}</title>'
                       "</circle>")
    for row, (index, run) in enumerate(series):
        y = legend + 16 * row
        out.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{colour(index)}"/>'
                   f'<text x="{left + 14}" y="{y}" font-size="11">'
                   f'{html.escape(_short(run["judge"] + " / " + run["setting"], 60))}</text>')
    out.append("</svg>")
    return "".join(out)


def _short(label: str, size: int = 28) -> str:
    """A legend label of at most `size` characters keeping both ends (the judge, and the row's class)."""
    return label if len(label) <= size else label[: size // 2 - 1] + "…" + label[-(size - size // 2):]


def svg_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Grouped bars per split x tier, one colour per leaderboard row (a run, or one training class of a run),
    whiskers at the CI bounds."""
    runs = [{**r, "setting": setting} for r, setting, _ in run_views(runs)]
    splits, tiers = report_names(runs)
    cells = [(s, t) for s in splits for t in tiers if any(result_cell(r, s, t) for r in runs)]
    width_per, bar, height, top, left = 40 + 18 * len(runs), 14, 220, 20, 40
    width = left + width_per * max(1, len(cells)) + 20
    legend_cols = max(1, (width - left) // 180)
    legend_rows = -(-len(runs) // legend_cols)
    svg_height = top + height + 36 + 16 * legend_rows
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{svg_height}" role="img">']
    out.append(svg_percent_grid(left, width - 10, top, height))
    for ci, (split, tier) in enumerate(cells):
        x0 = left + ci * width_per + 10
        for ri, run in enumerate(runs):
            cell = result_cell(run, split, tier)
            if not cell or cell["accuracy"] is None:
                continue
            x = x0 + ri * (bar + 4)
            y = top + height * (1 - cell["accuracy"])
            tip = html.escape(f"{run['judge']} / {run['setting']} {split}/{tier}: {format_cell(cell)}")
            out.append(f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{top + height - y:.1f}" '
                       f'fill="{colour(ri)}"><title>{tip}</title></rect>')
            lo, hi = cell["ci"]
            if lo is not None:
                ylo, yhi, xm = top + height * (1 - lo), top + height * (1 - hi), x + bar / 2
                out.append(svg_whisker(xm, ylo, yhi))
        out.append(f'<text x="{x0 + width_per / 2 - 10}" y="{top + height + 16}" font-size="11" '
                   f'text-anchor="middle">{split[:4]}/{tier}</text>')
    for ri, run in enumerate(runs):
        y = top + height + 28 + 16 * (ri // legend_cols)
        x = left + (ri % legend_cols) * 180
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colour(ri)}"/>'
                   f'<text x="{x + 14}" y="{y + 9}" font-size="11">'
                   f'{html.escape(_short(run["judge"] + " / " + run["setting"]))}</text>')
    out.append("</svg>")
    return "".join(out)
