"""Reports show only the columns that exist and fold their detail: on PersonaMem-shaped data (three question
types judged in one context length of the seven types x three lengths the layout declares) the leaderboard has
one column per judged split x tier and the total, no `avg` repeating a split's only tier with other bootstrap
draws and no column of dashes; the Reliability section shows one row per run with the split x tier rows folded
(`<details>`, in Markdown and HTML), and the example verdicts fold the persona, question and both answers of
their cases, cut to the stated limit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tailorbench.datasets import load_benchmark
from tailorbench.evaluate.results import EXAMPLE_TEXT_CHARS, clip
from tailorbench.personas import render_persona
from tests.helpers.report_runs import demo_runs, personamem_run


@pytest.fixture(scope="module")
def pm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return personamem_run(tmp_path_factory.mktemp("pm"))


def _table(report: str, heading: str) -> list[list[str]]:
    """The first Markdown table under `heading`, as rows of cells (the header first)."""
    block = report.split(f"## {heading}\n", 1)[1]
    lines = [line for line in block.split("\n## ", 1)[0].splitlines() if line.startswith("| ")]
    first = [line for line in lines if not line.startswith("|---")]
    rows: list[list[str]] = []
    for line in first:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if rows and cells == rows[0]:
            break  # the folded table starts with the same header
        rows.append(cells)
    return rows


def test_personamem_leaderboard_shows_only_the_judged_cells(pm: Path) -> None:
    report = (pm / "report.md").read_text(encoding="utf-8")
    header, *rows = _table(report, "Leaderboard")
    assert header == ["judge", "setting", "Recall_user_shared_facts 32k", "Track_full_preference_evolution 32k",
                      "Suggest_new_ideas 32k", "total"]
    assert not any(h.endswith(" avg") for h in header)
    assert len(rows) == 1 and "–" not in rows[0]  # no column of dashes
    # the columns left out are named under the table
    note = next(line for line in report.splitlines() if line.startswith("Columns:"))
    assert "128k, 1M" in note and "generalizing_to_new_scenarios" in note and "no *avg*" in note
    # the HTML shows the same columns
    page = (pm / "report.html").read_text(encoding="utf-8")
    assert "Recall_user_shared_facts avg" not in page and "Recall_user_shared_facts 128k" not in page


def test_reliability_shows_a_row_per_run_and_folds_the_cells(pm: Path) -> None:
    report = (pm / "report.md").read_text(encoding="utf-8")
    section = report.split("## Reliability\n", 1)[1].split("\n## ", 1)[0]
    visible, folded = section.split("<details>", 1)
    assert [line.split(" | ")[2] for line in visible.splitlines() if line.startswith("| first")] == ["all"]
    cells = [line.split(" | ")[2] for line in folded.splitlines() if line.startswith("| first")]
    # the leaderboard's columns: each split's one tier, no split average of the same cases
    assert cells == ["recall_user_shared_facts/32k", "track_full_preference_evolution/32k", "suggest_new_ideas/32k"]
    assert "</details>" in folded
    page = (pm / "report.html").read_text(encoding="utf-8")
    assert re.search(r"<details><summary>By split × tier: 3 more rows for 1 run", page)


def test_demo_leaderboard_keeps_every_tier_and_average(tmp_path: Path) -> None:
    out = demo_runs(tmp_path / "demo")
    header = _table((out / "report.md").read_text(encoding="utf-8"), "Leaderboard")[0]
    assert header == ["judge", "setting", "Specific easy", "Specific medium", "Specific hard", "Specific avg",
                      "General easy", "General medium", "General hard", "General avg", "total"]
    reliability = (out / "report.md").read_text(encoding="utf-8").split("## Reliability\n", 1)[1]
    visible = reliability.split("<details>", 1)[0]
    assert sum(line.startswith("| ") and not line.startswith("| judge") for line in visible.splitlines()) == 10


def test_example_verdicts_show_their_cases_texts(pm: Path) -> None:
    results = json.loads((pm / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((pm / "manifest.json").read_text(encoding="utf-8"))
    cases = {c.id: c for c in load_benchmark(manifest["data"]).cases}
    report = (pm / "report.md").read_text(encoding="utf-8")
    folded = report.split("## Example verdicts\n", 1)[1].split("<details>", 1)[1].split("</details>", 1)[0]
    assert f"each text cut to {EXAMPLE_TEXT_CHARS} characters" in folded
    examples = [e for kind in results["examples"].values() for e in kind]
    assert examples
    for e in examples:
        case = cases[e["case_id"]]
        texts = e["texts"]
        assert texts == {"persona": clip(render_persona(case.persona)), "question": clip(case.question),
                         "chosen": clip(case.chosen), "rejected": clip(case.rejected)}
        assert all(len(t) <= EXAMPLE_TEXT_CHARS for t in texts.values())
        row = next(line for line in folded.splitlines() if f"| {e['case_id']} |" in line)
        for text in texts.values():
            assert text in row
    page = (pm / "report.html").read_text(encoding="utf-8")
    assert "<details><summary>The cases" in page


def test_clip_states_its_cut() -> None:
    assert clip("a  b\nc") == "a b c"
    cut = clip("x" * 500)
    assert len(cut) == EXAMPLE_TEXT_CHARS and cut.endswith("…")


def test_the_report_says_whose_labels_the_data_holds(pm: Path) -> None:
    """PersonaMem's labels are its construction's correct options: the report says so and never calls them the
    human-preferred answer; every registered layout declares whose labels it holds."""
    from tailorbench.datasets.layouts import LAYOUTS, all_layouts

    report = (pm / "report.md").read_text(encoding="utf-8")
    results = json.loads((pm / "results.json").read_text(encoding="utf-8"))
    assert results["dataset"]["labels"] == "constructed"
    assert LAYOUTS.get("personamem").chosen_is in results["dataset"]["labels_note"]
    assert "| personamem | 72 |" in report and "| constructed | 1 |" in report
    assert "human-preferred" not in report and "human-preferred" not in (pm / "report.html").read_text()
    for layout in all_layouts():
        assert layout.labels in ("human-labelled", "constructed", "not stated"), layout.name
        assert layout.chosen_is, layout.name
    assert LAYOUTS.get("hub").labels == "human-labelled" and LAYOUTS.get("prefeval").labels == "constructed"
