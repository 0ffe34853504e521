"""Building blocks shared by every report (runs, generation, stages): percentages, Markdown and HTML tables,
and one self-contained HTML page style."""

from __future__ import annotations

import html

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
         "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}th{background:#f4f4f4}"
         ".warn{color:#a40}tr.warn td{background:#fdf0e6}")


def pct(value: float | None) -> str:
    """A fraction as a percentage with one decimal; `–` for a missing value."""
    return "–" if value is None else f"{100 * value:.1f}"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(header: list[str], rows: list[list[str]], row_classes: list[str] | None = None) -> str:
    """A table; `row_classes` gives each row a CSS class (e.g. `warn`), '' for none."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    classes = row_classes or [""] * len(rows)
    body = "".join((f"<tr class='{html.escape(k)}'>" if k else "<tr>")
                   + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row, k in zip(rows, classes, strict=True))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_page(title: str, body: str, extra_style: str = "") -> str:
    """A self-contained page (inline style, no external assets)."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}{extra_style}</style></head><body>{body}</body></html>\n")


#: one colour per run in every chart (cycled beyond 16 runs)
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#d62728")


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def svg_percent_grid(left: float, right: float, top: float, height: float) -> str:
    """Horizontal grid lines with labels at 0, 25, 50, 75, 100 % of a vertical axis."""
    out = []
    for grid in (0, 25, 50, 75, 100):
        y = top + height * (1 - grid / 100)
        out.append(f'<line x1="{left}" x2="{right}" y1="{y}" y2="{y}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y + 4}" font-size="10" text-anchor="end">{grid}</text>')
    return "".join(out)


def svg_whisker(xm: float, ylo: float, yhi: float, half: float = 4) -> str:
    """A vertical CI whisker from ylo to yhi with caps of width 2 * half."""
    return (f'<path d="M{xm},{ylo:.1f}V{yhi:.1f}M{xm - half},{ylo:.1f}H{xm + half}'
            f'M{xm - half},{yhi:.1f}H{xm + half}" stroke="#222"/>')
