"""`tailor data check` on a multiple-choice benchmark (PersonaMem- and PrefEval-shaped fixtures) shows what means
something for items with options: items per split x tier, options per item, chance, where the right option sits,
users, repeated questions, and the pair view as one count; none of the pair view's counts that read as broken
data (`repeated rows`, `rows repeated in another tier`, `label flipped rows`), no `None` and no empty cell, and
nothing cut at an 80-column terminal (long values wrap)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets.choice import load_choice_items, pair_view
from tests.helpers.benchmark_fixtures import make_personamem, make_prefeval, personamem_row

PAIR_VIEW_ROWS = ("repeated rows", "rows repeated in another tier", "label flipped rows",
                  "rows contradicted by swapped labels", "personas total", "equal length answers", "chosen longer")


def _data(kind: str, root: Path) -> Path:
    if kind == "personamem":
        return make_personamem(root, [personamem_row(n) for n in range(24)])
    return make_prefeval(root)


def _table(output: str) -> dict[str, str]:
    """The rich table's rows as check -> value, a value folded onto several lines joined again."""
    rows: dict[str, str] = {}
    key = ""
    for line in output.splitlines():
        if not line.startswith("│"):
            continue
        check, value = (part.strip() for part in line.strip("│").split("│"))
        if check:
            key = check
            rows[key] = value
        else:
            rows[key] += value if rows[key].endswith(("-", "/", "_")) else " " + value
    return rows


@pytest.mark.parametrize("kind", ["personamem", "prefeval"])
def test_data_check_of_items_shows_their_own_counts(tmp_path: Path, kind: str) -> None:
    data = _data(kind, tmp_path / kind)
    runner = CliRunner()
    report = json.loads(runner.invoke(app, ["data", "check", str(data), "--json"]).stdout)
    items = load_choice_items(data).items
    assert report["task"] == "multiple-choice" and report["items"] == len(items)
    assert report["pair_view_rows"] == sum(1 for i in items for _ in pair_view(i))
    assert report["right_option_position"] == dict(sorted(Counter(i.answer for i in items).items()))
    assert report["chance"] == pytest.approx(sum(1 / len(i.options) for i in items) / len(items))
    assert report["items_per_split_tier"] == dict(sorted(Counter(f"{i.split}/{i.tier}" for i in items).items()))
    assert not {"repeated_rows", "rows_repeated_in_another_tier", "personas_total"} & set(report)
    # the table at 80 columns: every row has a value, nothing reads None, nothing is cut
    result = runner.invoke(app, ["data", "check", str(data)], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    rows = _table(result.stdout)
    assert all(value for value in rows.values()), rows
    assert "None" not in result.stdout and "…" not in result.stdout
    assert not set(PAIR_VIEW_ROWS) & set(rows), rows
    assert rows["items"] == str(len(items)) and rows["pair view rows"] == str(report["pair_view_rows"])
    citation = report["layout_stats"]["card"]["citation"]
    assert " ".join(rows["card citation"].split()) == citation


def test_personamem_names_the_declared_names_it_does_not_hold(tmp_path: Path) -> None:
    data = _data("personamem", tmp_path)
    report = json.loads(CliRunner().invoke(app, ["data", "check", str(data), "--json"]).stdout)
    assert report["tiers"] == ["32k"] and report["declared_tiers_without_items"] == ["128k", "1M"]
    assert report["splits"] == ["recall_user_shared_facts", "track_full_preference_evolution", "suggest_new_ideas"]
    assert "generalizing_to_new_scenarios" in report["declared_splits_without_items"]


def test_a_pairwise_benchmark_keeps_its_integrity_report(tmp_path: Path) -> None:
    """The demo (pairs) keeps the pair counts, and a layout without a persona file says so instead of None."""
    result = CliRunner().invoke(app, ["data", "check", "demo"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    rows = _table(result.stdout)
    assert "repeated rows" in rows and rows["personas total"] == "not in this layout"
    assert "None" not in result.stdout and all(rows.values()), rows
