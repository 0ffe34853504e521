"""The study report (study.md, summary.html) read as a new user reads it: it opens with a headline generated from
the figures (each stage's headline figures with their CI), every number of which is in the report's tables;
every figure is defined, each definition linking its stage report; the annotation is counted in labels and in
attribute ratings, named apart and equal to the exports; a relative change is said in words ("67% fewer"); and
`tailor report` / `tailor view` take the study's folder."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.reporting import relative_change

NUMBER = re.compile(r"\d+(?:\.\d+)?")
LINK = re.compile(r"\]\(([^)#]+)\)")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`tailor study demo` (the bundled example, people on a sample in stage 3), once for the module."""
    root = tmp_path_factory.mktemp("study-report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAILORBENCH_CALL_CACHE", str(root / "calls.sqlite"))
        result = CliRunner().invoke(app, ["study", "demo", str(root / "demo")])
        assert result.exit_code == 0, result.output
        yield root / "demo"


def _sections(md: str) -> dict[str, str]:
    """A Markdown page's `## ` sections by title."""
    return {part.split("\n", 1)[0]: part.split("\n", 1)[1] for part in md.split("\n## ")[1:]}


def _tables(md: str) -> str:
    """Every table line of a page (headers included)."""
    return "\n".join(line for line in md.splitlines() if line.startswith("| "))


def test_the_headline_opens_the_report_and_each_number_is_in_its_tables(study: Path) -> None:
    md = (study / "report" / "study.md").read_text(encoding="utf-8")
    assert md.split("\n")[2] == "## Headline"
    headline = _sections(md)["Headline"]
    lines = [line for line in headline.splitlines() if line.startswith("- ")]
    assert [line.split(",", 1)[0] for line in lines[:3]] == ["- Stage 1", "- Stage 2", "- Stage 3"]
    assert "[" in lines[0] and "Fleiss' kappa" in lines[0] and "inflation" in lines[2]  # figures with their CI
    tables = _tables(md)
    numbers = [n for line in lines for n in NUMBER.findall(LINK.sub("", line))]
    assert len(numbers) > 20
    assert not [n for n in numbers if n not in tables], [n for n in numbers if n not in tables]
    # each stage's headline figures: the figures of its stage report (its tables below the stage's headline)
    figures = _sections(md)["Headline figures"]
    for line in figures.splitlines()[3:]:
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        stage = (study / "report" / f"{cells[0].split(' ', 1)[1]}.md").read_text(encoding="utf-8")
        below = stage.split("## Headline\n", 1)[1].split("\n## ", 1)[1]
        assert all(n in below for n in NUMBER.findall(" | ".join(cells[1:]))), line


def test_every_figure_is_defined_and_every_link_leads_to_a_stage_report(study: Path) -> None:
    md = (study / "report" / "study.md").read_text(encoding="utf-8")
    definitions = _sections(md)["Definitions"]
    for term in ("*problematic attributes*", "*Fleiss' kappa*", "*Cohen's kappa", "*F1 vs humans*", "*inflation*",
                 "*no better than generic*", "*mention uplift*", "*undefined*", "*admissibility*", "ω", "ρ",
                 "*Spearman*", "*labels*", "*attribute ratings*", "*95% CI*"):
        assert term in definitions, term
    links = LINK.findall(md)
    assert {"extraction.md", "relevance.md", "incorporation.md"} <= set(links)
    assert all((study / "report" / link).is_file() for link in links), links


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [v for k, v in attrs if tag == "a" and k == "href" and v]


def test_summary_html_lists_the_stage_reports_as_links(study: Path) -> None:
    parser = _Links()
    parser.feed((study / "report" / "summary.html").read_text(encoding="utf-8"))
    assert {"extraction.html", "relevance.html", "incorporation.html"} <= set(parser.hrefs)
    assert all((study / "report" / href).is_file() for href in parser.hrefs), parser.hrefs


def test_labels_and_attribute_ratings_are_counted_apart_as_the_exports_hold_them(study: Path) -> None:
    md = (study / "report" / "study.md").read_text(encoding="utf-8")
    rows = [line.strip("|").split(" | ") for line in _sections(md)["Annotation"].splitlines()
            if line.startswith("| ")]
    assert [c.strip() for c in rows[0]] == ["stage", "items", "gold items", "labels", "attribute ratings"]
    status = json.loads(CliRunner().invoke(app, ["study", "status", str(study), "--json"]).stdout)
    for row in rows[2:]:
        stage, items, _, labels, ratings = (c.strip() for c in row)
        export = study / "steps" / f"{stage}.collect" / "export"
        assert int(labels) == len((export / "labels.jsonl").read_text().splitlines())
        assert int(labels) == status["stages"][stage]["labels_done"]  # the console's unit is the label
        assert int(ratings) == len((export / "ratings.jsonl").read_text().splitlines())
        assert int(items) == len((export / "items.jsonl").read_text().splitlines())


def test_a_relative_change_is_said_in_words(study: Path) -> None:
    report = json.loads((study / "report" / "extraction.json").read_text())
    real, synthetic = (report["by_source"][s]["problematic"] for s in ("real", "synthetic"))
    words = relative_change(real / synthetic - 1)
    assert re.fullmatch(r"\d+% (fewer|more)|as many", words)
    for name in ("study.md", "extraction.md", "summary.md"):
        text = (study / "report" / name).read_text(encoding="utf-8")
        assert words in text, name
        assert not re.search(r"[-+]\d+% ", text), name  # no signed percentage
    assert relative_change(-2 / 3) == "67% fewer" and relative_change(0.5) == "50% more"
    assert relative_change(0.001) == "as many" and relative_change(None) == "undefined"


def test_report_and_view_take_the_study_folder(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "board"
    result = CliRunner().invoke(app, ["report", str(study), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out / 'report.md'} and {out / 'report.html'}" in result.stdout
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# Study example") and "\n## Headline\n" in md and "\n## Definitions\n" in md
    links = LINK.findall(md)
    assert len(links) >= 6 and all((out / link).resolve().is_file() for link in links), links
    parser = _Links()
    parser.feed((out / "report.html").read_text(encoding="utf-8"))
    assert parser.hrefs and all((out / href).resolve().is_file() for href in parser.hrefs), parser.hrefs
    got = json.loads(CliRunner().invoke(app, ["report", str(study), "--out", str(out), "--json"]).stdout)
    assert [(r["kind"], r["stages"]) for r in got] == [("stage", ["extraction", "relevance", "incorporation"])]
    view = CliRunner().invoke(app, ["view", str(study), "--bundle", str(tmp_path / "site"), "--json"])
    assert view.exit_code == 0, view.output
    assert len(json.loads(view.stdout)["runs"]) == 1
    pushed = CliRunner().invoke(app, ["report", str(study), "--out", str(out), "--push", "me/board"])
    assert pushed.exit_code == 2 and "no leaderboard" in pushed.output
