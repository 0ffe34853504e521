"""Every stage report opens with its headline (the stage's rows of the summary: each headline figure with its
95% CI), and every number of it is found in the report's tables below it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def test_stage_reports_open_with_their_headline(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    out = tmp_path / "example"
    result = CliRunner().invoke(app, ["stages", "example", "--out", str(out)])
    assert result.exit_code == 0, result.output
    stages = sorted(p for p in out.glob("*.md") if p.name != "summary.md")
    assert {p.stem for p in stages} == {"extraction", "relevance", "incorporation", "verifier",
                                        "relevance_classifier"}
    for path in stages:
        text = path.read_text(encoding="utf-8")
        assert text.split("\n")[2] == "## Headline", path
        block, rest = text.split("## Headline\n", 1)[1].split("\n## ", 1)
        rows = [line for line in block.splitlines() if line.startswith("| ") and "---" not in line][1:]
        assert rows, path  # the header row names the CI level; the rows hold the figures
        numbers = [n for row in rows for n in NUMBER.findall(row)]
        missing = [n for n in numbers if n not in rest]
        assert not missing, (path.name, missing)
        page = path.with_suffix(".html").read_text(encoding="utf-8")
        assert page.index("<h2>Headline</h2>") < page.index("<h2>", page.index("<h2>Headline</h2>") + 1)
        assert "<svg" not in page[:page.index("<h2>Headline</h2>")]  # nothing before the headline but the title


def test_the_summary_opens_with_a_headline_whose_numbers_are_in_its_table(tmp_path: Path) -> None:
    """summary.md (threestage/headline.py, as the study report): one line per stage report, interventions
    included, each linking its report; every number of it in the headline figures table."""
    pytest.importorskip("bm25s")
    out = tmp_path / "example"
    assert CliRunner().invoke(app, ["stages", "example", "--out", str(out)]).exit_code == 0
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert md.split("\n")[2] == "## Headline"
    lines = [line for line in md.split("## Headline\n", 1)[1].split("\n## ", 1)[0].splitlines()
             if line.startswith("- ")]
    links = [re.findall(r"\]\(([^)]+)\)", line) for line in lines]
    assert [link for found in links for link in found] == [f"{s}.md" for s in (
        "extraction", "relevance", "incorporation", "verifier", "relevance_classifier")]
    tables = "\n".join(line for line in md.splitlines() if line.startswith("| "))
    numbers = [n for line in lines for n in NUMBER.findall(re.sub(r"\]\([^)]*\)", "", line))]
    assert numbers and not [n for n in numbers if n not in tables]
    assert "## Definitions" in md and "*inflation*" in md
