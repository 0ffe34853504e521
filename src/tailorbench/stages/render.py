"""The pieces every stage report is made of: tables (`Table`), number formats (`f3`, `with_ci`), the bar chart
with CI whiskers (`svg_bars`) and the alignment-count rows. The stage modules build their report parts from
these, and `report.py` renders and dispatches them, so no stage module imports the report.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

Table = tuple[str, list[str], list[list[str]]]
#: (label, value, ci lo, ci hi) per bar
Bar = tuple[str, float | None, float | None, float | None]


def f3(x: Any) -> str:
    return "–" if x is None else f"{float(x):.3f}"


def with_ci(x: Any, ci: Sequence[Any] | None) -> str:
    if x is None:
        return "undefined"
    if not ci or ci[0] is None:
        return f3(x)
    return f"{f3(x)} [{f3(ci[0])}, {f3(ci[1])}]"


def svg_bars(bars: Sequence[Bar], lo: float = 0.0, hi: float = 1.0, title: str = "") -> str:
    """Horizontal bars with CI whiskers on a fixed [lo, hi] axis; undefined values are labelled, not drawn."""
    row, left, width = 22, 200, 360
    height = row * len(bars) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" role="img">']
    if title:
        out.append(f'<text x="4" y="14" font-size="12" font-weight="bold">{html.escape(title)}</text>')

    def x(v: float) -> float:
        return left + width * (min(max(v, lo), hi) - lo) / (hi - lo)

    for tick in (lo, (lo + hi) / 2, hi):
        out.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="20" y2="{height - 14}" stroke="#ddd"/>'
                   f'<text x="{x(tick):.1f}" y="{height - 2}" font-size="10" text-anchor="middle">{tick:g}</text>')
    for i, (label, value, c_lo, c_hi) in enumerate(bars):
        y = 24 + i * row
        out.append(f'<text x="{left - 6}" y="{y + 12}" font-size="11" text-anchor="end">'
                   f"{html.escape(label[:32])}</text>")
        if value is None:
            out.append(f'<text x="{left + 4}" y="{y + 12}" font-size="11" fill="#888">undefined</text>')
            continue
        x0, x1 = x(max(lo, 0.0) if lo < 0 < hi else lo), x(value)
        out.append(f'<rect x="{min(x0, x1):.1f}" y="{y + 2}" width="{abs(x1 - x0):.1f}" height="14" fill="#4e79a7">'
                   f"<title>{html.escape(label)}: {f3(value)}</title></rect>")
        if c_lo is not None and c_hi is not None:
            out.append(f'<path d="M{x(c_lo):.1f},{y + 9}H{x(c_hi):.1f}M{x(c_lo):.1f},{y + 4}V{y + 14}'
                       f'M{x(c_hi):.1f},{y + 4}V{y + 14}" stroke="#222"/>')
        out.append(f'<text x="{left + width + 6}" y="{y + 12}" font-size="11">{f3(value)}</text>')
    out.append("</svg>")
    return "".join(out)


def alignment_rows(alignment: dict[str, Any] | None, missing: dict[str, int]) -> list[list[str]]:
    rows = [[f"missing: {k}", str(v)] for k, v in missing.items()]
    if not alignment:
        return rows
    for rater, n in alignment.get("model_votes_without_human", {}).items():
        rows.append([f"votes of {rater} for items no human rated", str(n)])
    for rater, n in alignment.get("user_id_mismatches", {}).items():
        rows.append([f"votes of {rater} whose index matches a human item under another user_id", str(n)])
    mm = alignment.get("attribute_text_mismatch", {})
    rows.append(["items whose attribute texts differ between raters", str(mm.get("items", 0))])
    rows.append(["attributes not shared by all raters of their item", str(mm.get("attributes_not_shared", 0))])
    for key in ("judgments_without_attribute", "attributes_without_judgment", "lines_for_unknown_items"):
        if alignment.get(key):
            rows.append([key.replace("_", " "), str(alignment[key])])
    return rows
