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
    column_label_reach,
    pct,
    svg_column_labels,
    svg_percent_grid,
    svg_whisker,
    text_width,
)


def _legend(labels: Sequence[tuple[int, str]], left: float, top: float, width: float) -> tuple[str, float, float]:
    """A legend of whole labels (colour index, text) in as many columns as `width` holds, at least one; returns the
    SVG, its height and its width (wider than `width` only when one label is)."""
    if not labels:
        return "", 0.0, 0.0
    column = max(text_width(text) for _, text in labels) + 24
    per_row = max(1, int((width - left) // column))
    out = []
    for k, (index, text) in enumerate(labels):
        x, y = left + (k % per_row) * column, top + 16 * (k // per_row)
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="10" height="10" fill="{colour(index)}"/>'
                   f'<text x="{x + 14:.1f}" y="{y + 9:.1f}" font-size="11">{html.escape(text)}</text>')
    rows = -(-len(labels) // per_row)
    return "".join(out), 16.0 * rows, left + column * min(per_row, len(labels))


def _label(run: dict[str, Any]) -> str:
    return f"{run['judge']} / {run['setting']}"


def svg_ratio_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Accuracy by length-ratio bin, one line per leaderboard row (counts are in the table)."""
    runs = [{**r, "setting": setting} for r, setting, _ in run_views(runs)]
    series = [(k, r) for k, r in enumerate(runs) if r.get("by_length_ratio")]
    if not series:
        return ""
    bins = [b["bin"] for b in series[0][1]["by_length_ratio"]]
    top, height, left, step = 20, 180, 40, 90
    width = left + step * len(bins) + 20
    legend, legend_height, legend_width = _legend([(k, _label(r)) for k, r in series], left, top + height + 34,
                                                  width)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(width, legend_width):.0f}" '
           f'height="{top + height + 34 + legend_height:.0f}" role="img"><title>accuracy by length ratio</title>']
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
            tip = html.escape(f"{_label(run)} {c['bin']}: {pct(c['accuracy'])} (n={c['n']})")
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour(index)}"><title>{tip}</title>'
                       "</circle>")
    out.append(legend)
    out.append("</svg>")
    return "".join(out)


def svg_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Grouped bars per split x tier, one colour per leaderboard row (a run, or one training class of a run),
    whiskers at the CI bounds. Column labels are whole `split/tier` names, turned when they do not fit; the
    legend holds every row's whole `judge / setting`."""
    runs = [{**r, "setting": setting} for r, setting, _ in run_views(runs)]
    splits, tiers = report_names(runs)
    cells = [(s, t) for s in splits for t in tiers if any(result_cell(r, s, t) for r in runs)]
    names = [f"{s}/{t}" for s, t in cells]
    n = max(1, len(runs))
    bar = max(6, min(14, 100 // n))
    gap = 4 if bar >= 10 else 2
    group = n * (bar + gap) - gap
    width_per, height, top = max(48, group + 24), 220, 20
    # a turned label ends at its column's centre and reaches left: the first one sets the left margin
    left = max(40.0, column_label_reach(names[0]) - width_per / 2 + 8) if names else 40.0
    width = left + width_per * max(1, len(cells)) + 20
    centres = [left + ci * width_per + width_per / 2 for ci in range(len(cells))]
    labels, label_height = svg_column_labels(list(zip(centres, names, strict=True)), top + height + 16,
                                             width_per - 4)
    legend_top = top + height + 16 + label_height + 8
    legend, legend_height, legend_width = _legend([(ri, _label(r)) for ri, r in enumerate(runs)], min(left, 40),
                                                  legend_top, width)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(width, legend_width):.0f}" '
           f'height="{legend_top + legend_height:.0f}" role="img">']
    out.append(svg_percent_grid(left, width - 10, top, height))
    for ci, (split, tier) in enumerate(cells):
        x0 = left + ci * width_per + (width_per - group) / 2
        for ri, run in enumerate(runs):
            cell = result_cell(run, split, tier)
            if not cell or cell["accuracy"] is None:
                continue
            x = x0 + ri * (bar + gap)
            y = top + height * (1 - cell["accuracy"])
            tip = html.escape(f"{_label(run)} {split}/{tier}: {format_cell(cell)}")
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar}" height="{top + height - y:.1f}" '
                       f'fill="{colour(ri)}"><title>{tip}</title></rect>')
            lo, hi = cell["ci"]
            if lo is not None:
                ylo, yhi, xm = top + height * (1 - lo), top + height * (1 - hi), x + bar / 2
                out.append(svg_whisker(xm, ylo, yhi, half=min(4, bar / 2)))
    out.append(labels)
    out.append(legend)
    out.append("</svg>")
    return "".join(out)
