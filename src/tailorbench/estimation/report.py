"""The estimate as a Markdown section: the three estimates per cell, and under the table what each one is and
when it is valid (docs/metrics.md, "Human-anchored estimates"), for `tailor estimate`'s readers and for any
report that shows a judge-only figure beside what people would say."""

from __future__ import annotations

import html

from tailorbench.estimation.records import EstimateReport, IntervalRecord
from tailorbench.reporting import html_table, md_table, with_ci

__all__ = ["DEFINITIONS", "render_html", "render_markdown"]

DEFINITIONS = (
    "*human-only*: the mean of people's labels on the labelled cases (valid under the stated sampling design); "
    "*proxy-only*: the proxy's mean over every case, the judge-only figure (its interval is about the proxy, "
    "valid for people only if the proxy is unbiased, which nothing here checks); *anchored*: prediction-powered "
    "inference (PPI++, power-tuned), the proxy on every case corrected by people's labels, valid whatever the "
    "proxy's bias and narrower than human-only when the proxy tracks people; *labels worth*: the human labels a "
    "human-only estimate would need for the anchored interval."
)


def _cell(interval: IntervalRecord | None) -> str:
    return "-" if interval is None else with_ci(interval.estimate, list(interval.ci))


HEADER = ["cell", "cases", "labels", "human-only", "proxy-only", "anchored", "labels worth"]


def _parts(report: EstimateReport) -> tuple[str, str, list[list[str]], list[str]]:
    """(title, provenance line, table rows, notes): what both renderings show."""
    rows = [[c.cell, str(c.n_items), str(c.n_labels), _cell(c.human_only), _cell(c.proxy_only), _cell(c.anchored),
             "-" if c.effective_labels is None else f"{c.effective_labels:.0f}"] for c in report.cells]
    provenance = (f"System {report.system}; proxy {report.proxy or 'its own judge'}; labels: {report.labels} "
                  f"({report.aggregation}); {report.design} sample"
                  + (" (assumed: no sampling plan)" if report.assumed_uniform else "")
                  + f"; {report.level:.0%} intervals.")
    notes = [*report.notes, *(f"{c.cell}: {c.note}" for c in report.cells if c.note)]
    return f"Human-anchored estimate: {report.estimand}", provenance, rows, notes


def render_markdown(report: EstimateReport, heading: str = "##") -> str:
    """The report's cells as a Markdown table with the definitions and notes under it."""
    title, provenance, rows, notes = _parts(report)
    lines = [f"{heading} {title}", "", provenance, "", md_table(HEADER, rows), "", DEFINITIONS]
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def render_html(report: EstimateReport) -> str:
    """The same as an HTML section (every value escaped), what `tailor view` shows of an estimate file; a cell
    without a human-only or anchored estimate (too few labels) shows '-' and its note."""
    title, provenance, rows, notes = _parts(report)
    body = (f"<h2>{html.escape(title)}</h2><p>{html.escape(provenance)}</p>" + html_table(HEADER, rows)
            + f"<p class='note'>{html.escape(DEFINITIONS.replace('*', ''))}</p>")
    if notes:
        body += "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"
    return body
