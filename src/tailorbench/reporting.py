"""Building blocks shared by every report (runs, generation, stages): percentages, Markdown and HTML tables,
and one self-contained HTML page style."""

from __future__ import annotations

import html

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
         "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}th{background:#f4f4f4}"
         ".warn{color:#a40}")


def pct(value: float | None) -> str:
    """A fraction as a percentage with one decimal; `–` for a missing value."""
    return "–" if value is None else f"{100 * value:.1f}"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_page(title: str, body: str, extra_style: str = "") -> str:
    """A self-contained page (inline style, no external assets)."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}{extra_style}</style></head><body>{body}</body></html>\n")
