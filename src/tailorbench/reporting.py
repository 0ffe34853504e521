"""Building blocks shared by every report (runs, generation, stages): percentages and numbers with CIs,
Markdown and HTML tables, one self-contained HTML page style, and SVG pieces (grid, whiskers, bars with CI
whiskers)."""

from __future__ import annotations

import colorsys
import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: the page never scrolls sideways: a wide table or chart scrolls in its own box (`scroll_box`), long words in
#: text wrap; a narrow window gets narrower margins (the viewer's view.css carries the same rules)
FIT = (".scroll{overflow-x:auto;max-width:100%;margin:1em 0}.scroll>table{margin:0}.scroll>svg{display:block}"
       "h1,h2,h3,h4,p,li,dd,summary{overflow-wrap:break-word}@media (max-width:600px){body{margin:1em .75em}}")

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
         "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}th{background:#f4f4f4}"
         ".warn{color:#a40}tr.warn td{background:#fdf0e6}" + FIT)


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
                   + "".join(f"<td>{html.escape('' if c is None else str(c))}</td>" for c in row) + "</tr>"
                   for row, k in zip(rows, classes, strict=True))
    return scroll_box(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def scroll_box(inner: str) -> str:
    """A table or chart in a box that scrolls sideways when it is wider than the page ('' stays '')."""
    return f"<div class='scroll'>{inner}</div>" if inner else ""


def html_page(title: str, body: str, extra_style: str = "") -> str:
    """A self-contained page (inline style, no external assets)."""
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}{extra_style}</style></head><body>{body}</body></html>\n")


#: one colour per run in every chart (`colour` goes on beyond 16 runs): Tableau 10, then six hues that differ from
#: every colour before them by at least 25 in CIELAB (CIE76 delta E; tests/evaluate/test_report_charts.py measures it)
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac", "#7b68ee", "#ff1493", "#32cd32", "#8b008b", "#8db600", "#800000")


@dataclass
class Section:
    """One part of a report, rendered the same way in Markdown and HTML: paragraphs, a table, notes under it."""

    title: str
    before: list[str] = field(default_factory=list)
    header: list[str] | None = None
    rows: list[list[str]] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    #: HTML only (a chart), placed before the table
    figure: str = ""
    level: int = 2
    #: HTML only: a CSS class per row ('' for none), e.g. `warn` on in-training rows
    row_classes: list[str] | None = None
    #: detail folded under the table (`<details>` in HTML and Markdown): its summary line, header and rows
    fold: str = ""
    fold_header: list[str] | None = None
    fold_rows: list[list[str]] = field(default_factory=list)


def md_fold(summary: str, header: list[str], rows: list[list[str]]) -> str:
    """A table folded under a summary line: a `<details>` block, which Markdown viewers render closed."""
    return f"<details><summary>{html.escape(summary, quote=False)}</summary>\n\n{md_table(header, rows)}\n\n</details>"


def html_fold(summary: str, header: list[str], rows: list[list[str]]) -> str:
    """The same table folded in HTML."""
    return f"<details><summary>{html.escape(summary)}</summary>{html_table(header, rows)}</details>"


_CODE = re.compile(r"`([^`]+)`")


_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


_EMPH = re.compile(r"(\*\*|\*)([^*]+)\1")


def inline_html(text: str) -> str:
    """The little Markdown the notes use (`code`, *emphasis*, **strong**, [links](url)) as HTML."""
    out = html.escape(text, quote=False)
    out = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", out)
    out = _LINK.sub(lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>', out)
    return _EMPH.sub(lambda m: f"<{'strong' if m.group(1) == '**' else 'em'}>{m.group(2)}"
                               f"</{'strong' if m.group(1) == '**' else 'em'}>", out)


_BODY = re.compile(r"<body>(.*)</body>", re.S)


def page_body(page: str) -> str:
    """The body of a page `html_page` wrote (what the viewer shows of a report)."""
    match = _BODY.search(page)
    return match.group(1) if match else ""


def colour(index: int) -> str:
    """The chart colour of row `index`: the palette, then (beyond 16 rows) hues a golden angle apart at three
    lightnesses, so no two rows of a chart share a colour."""
    if index < len(PALETTE):
        return PALETTE[index]
    hue = (index * 137.508) % 360 / 360
    red, green, blue = colorsys.hls_to_rgb(hue, (0.32, 0.5, 0.68)[index % 3], 0.65)
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


def svg_percent_grid(left: float, right: float, top: float, height: float) -> str:
    """Horizontal grid lines with labels at 0, 25, 50, 75, 100 % of a vertical axis."""
    out = []
    for grid in (0, 25, 50, 75, 100):
        y = top + height * (1 - grid / 100)
        out.append(f'<line x1="{left}" x2="{right}" y1="{y}" y2="{y}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y + 4}" font-size="10" text-anchor="end">{grid}</text>')
    return "".join(out)


#: character widths in ems, each at least DejaVu Sans' (the widest common sans-serif face, and chromium's on Linux)
_NARROW, _SLIM, _WIDE = frozenset("ijlI.,:;!|'`"), frozenset(" /ftr-()[]{}"), frozenset("mwMW@%~&#")


def _char_width(c: str) -> float:
    if c in _NARROW:
        return 0.3
    if c in _SLIM:
        return 0.42
    if c in _WIDE:
        return 1.0
    return 0.75 if c.isupper() else 0.64


def text_width(text: str, size: float = 11) -> float:
    """A generous estimate of the width in px of `text` at font size `size` in a sans-serif face (charts size
    their margins and legends by it, so a label is never cut)."""
    return size * sum(_char_width(c) for c in text)


#: the angle of column labels that do not fit their column
LABEL_ANGLE = 40


def svg_column_labels(labels: Sequence[tuple[float, str]], y: float, room: float, size: int = 11) -> tuple[str, float]:
    """Whole labels under a chart's columns, given as (centre x, text): level when every one fits `room` px, else
    turned by LABEL_ANGLE degrees and ending at the column's centre. Returns the SVG and the height the labels
    take below `y` (their first baseline)."""
    if not labels:
        return "", 0.0
    widest = max(text_width(t, size) for _, t in labels)
    if widest <= room:
        return "".join(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="middle">{html.escape(t)}</text>'
                       for x, t in labels), float(size)
    sin = math.sin(math.radians(LABEL_ANGLE))
    out = "".join(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="end" '
                  f'transform="rotate(-{LABEL_ANGLE} {x:.1f} {y:.1f})">{html.escape(t)}</text>' for x, t in labels)
    return out, widest * sin + size


def column_label_reach(label: str, size: int = 11) -> float:
    """How far left of its column's centre a turned label reaches (a chart's left margin must hold it)."""
    return text_width(label, size) * math.cos(math.radians(LABEL_ANGLE))


def svg_whisker(xm: float, ylo: float, yhi: float, half: float = 4) -> str:
    """A vertical CI whisker from ylo to yhi with caps of width 2 * half."""
    return (f'<path d="M{xm},{ylo:.1f}V{yhi:.1f}M{xm - half},{ylo:.1f}H{xm + half}'
            f'M{xm - half},{yhi:.1f}H{xm + half}" stroke="#222"/>')


# --- figures with CIs, report tables, bars with CI whiskers (the stage reports) ----------------------


#: (heading, header, rows) of one report table
Table = tuple[str, list[str], list[list[str]]]
#: (label, value, ci lo, ci hi) per bar
Bar = tuple[str, float | None, float | None, float | None]


def f3(x: Any) -> str:
    """A number with three decimals; `–` for a missing value."""
    return "–" if x is None else f"{float(x):.3f}"


def with_ci(x: Any, ci: Sequence[Any] | None) -> str:
    """`value [lo, hi]`, the value alone without a CI, `undefined` without a value."""
    if x is None:
        return "undefined"
    if not ci or ci[0] is None:
        return f3(x)
    return f"{f3(x)} [{f3(ci[0])}, {f3(ci[1])}]"


def relative_change(change: float | None, more: str = "more", fewer: str = "fewer", same: str = "as many") -> str:
    """A signed relative change (`real / synthetic - 1`) in words: `67% fewer`, `50% more`, `as many` (what rounds
    to 0%), `undefined` without a value; a sign in front of a percentage reads as a typo to most readers."""
    if change is None:
        return "undefined"
    shown = f"{abs(100 * change):.0f}"
    if shown == "0":
        return same
    return f"{shown}% {more if change > 0 else fewer}"


def svg_bars(bars: Sequence[Bar], lo: float = 0.0, hi: float = 1.0, title: str = "") -> str:
    """Horizontal bars with CI whiskers on a fixed [lo, hi] axis; undefined values are labelled, not drawn."""
    row, width = 22, 360
    left = max(120.0, max((text_width(b[0]) for b in bars), default=0.0) + 12)
    height = row * len(bars) + 40
    total = max(left + width + 80, text_width(title, 12) + 8)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total:.0f}" height="{height}" role="img">']
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
                   f"{html.escape(label)}</text>")
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
