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
