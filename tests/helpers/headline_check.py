"""A report's headline against its tables: every number the headline states (the stated levels aside: the 95% of
an interval, the 50% of parity or chance) is a cell, or part of a cell, of one of the report's Markdown tables."""

from __future__ import annotations

import re

NUMBER = re.compile(r"\d+(?:\.\d+)?")
#: levels the headline names, not figures of the data
LEVELS = ("(95% CI)", "95% bootstrap CI", "whole 95% CI", "(50%)", "of 50%", "1 / options")


def headline_and_tables(report: str) -> tuple[str, list[str]]:
    """The `## Headline` section's text and every table row after it."""
    assert "\n## Headline\n" in report, report[:200]
    after = report.split("\n## Headline\n", 1)[1]
    headline = re.split(r"\n#+ ", after, maxsplit=1)[0]
    headline = "\n".join(line for line in headline.splitlines() if not line.startswith("|"))
    rows = [line for line in after.splitlines() if line.startswith("| ")]
    return headline, rows


def missing_numbers(report: str) -> tuple[list[str], str]:
    """The numbers of the headline that no table cell holds (and the headline, to show on failure)."""
    headline, rows = headline_and_tables(report)
    text = headline
    for level in LEVELS:
        text = text.replace(level, "")
    cells = [cell.strip() for row in rows for cell in row.strip("|").split(" | ")]
    numbers = NUMBER.findall(text)
    assert numbers, headline
    return [n for n in numbers if not any(re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", c) for c in cells)], headline
