"""A multiple-choice report opens with its headline (docs/benchmarks.md, "Headline"): the best run's accuracy with
its 95% CI, its items and chance, each run against chance, and every figure whose whole CI lies below chance;
every number of it is a cell of the report's tables. The runs are made from prediction lines (no model needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.benchmarks.choice_report import MULTIPLE_CHOICE
from tailorbench.benchmarks.choice_results import compute_results
from tests.helpers.headline_check import headline_and_tables, missing_numbers


def _results(model: str, right: int, items: int = 40) -> dict[str, Any]:
    rows = [{"item": f"i{k}", "split": ("recall", "suggest")[k % 2], "tier": "32k", "n_options": 4,
             "correct": k < right, "status": "ok", "meta": {"topic": ("music", "travel")[k % 2]}}
            for k in range(items)]
    manifest = {"config": {"n_boot": 200, "seed": 0, "model": model, "data": "questions_32k.csv"},
                "data_stats": {"layout": "personamem", "splits": ["recall", "suggest"], "tiers": ["32k"]}}
    return {**compute_results(manifest, rows), "run": model}


def _render(runs: list[dict[str, Any]], out: Path) -> str:
    out.mkdir()
    (out / "report.md").write_text(MULTIPLE_CHOICE.render_markdown(runs, "Multiple-choice runs"))
    (out / "report.html").write_text(MULTIPLE_CHOICE.render_html(runs, "Multiple-choice runs"))
    return (out / "report.md").read_text()


def test_multiple_choice_report_opens_with_its_headline(tmp_path: Path) -> None:
    good, poor = _results("good", right=36), _results("poor", right=2)
    for name, runs in (("one", [poor]), ("two", [good, poor])):
        report = _render(runs, tmp_path / name)
        assert report.splitlines()[2] == "## Headline"
        headline, _ = headline_and_tables(report)
        best = runs[0]
        assert f"Best: `personamem · {best['model']}`, accuracy " in headline and "chance 0.250" in headline
        assert "below chance: `personamem · poor`" in headline
        assert "figures whose whole 95% CI lies below chance: `personamem · poor` on split recall" in headline
        if len(runs) > 1:
            assert "above chance: `personamem · good`" in headline
        missing, said = missing_numbers(report)
        assert not missing, (missing, said)
        page = (tmp_path / name / "report.html").read_text()
        assert page.index("<h2>Headline</h2>") < page.index("Accuracy over the answered items")


def test_rows_that_repeat_another_on_the_same_items_are_left_out(tmp_path: Path) -> None:
    """One tier: its row would be `all` again, and each split x tier its split's, each with another bootstrap draw
    (so another CI for the same figure); the table shows `all` and the splits only."""
    report = _render([_results("one-tier", right=20)], tmp_path / "r")
    rows = [line.split(" | ")[0].lstrip("| ") for line in report.splitlines() if line.startswith("| ")]
    assert {"all", "split recall", "split suggest"} <= set(rows)
    assert "tier 32k" not in rows and "recall/32k" not in rows and "suggest/32k" not in rows
