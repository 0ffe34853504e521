"""Any layout can be annotated: a benchmark in a registered layout that is not PersonaFeedback-shaped (other field
names, a flat survey profile, its own splits) imports as pairwise items, is labelled, and exports a benchmark
that `--data` reads back with the layout's split names (declared in the export's sidecar); an items file
declares other splits in its `<name>.layout.json`, and an undeclared split is refused with its line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.annotation.importer import read_import
from tailorbench.datasets import LAYOUTS, load_benchmark
from tailorbench.errors import DataError
from tests.annotation.conftest import vote_all
from tests.helpers.survey_layout import PROFILES, SurveyLayout, make_survey


@pytest.fixture
def survey_layout() -> Iterator[None]:
    LAYOUTS.add("survey", SurveyLayout())
    yield
    LAYOUTS.remove("survey")


def test_a_survey_layout_is_imported_labelled_and_exported_with_its_splits(
        tmp_path: Path, db: Database, survey_layout: None) -> None:
    data = make_survey(tmp_path / "survey")
    fmt, items = read_import(data, "pairwise")
    assert fmt == "benchmark" and len(items) == 6
    assert {it.payload["split"] for it in items} == {"north", "south"}
    assert items[0].payload["persona"] == PROFILES["p1"]  # the flat profile, as the layout read it
    service.create_project(db, "survey", "pairwise", 3)
    assert service.import_items(db, "survey", data)["items"] == 6
    for name in ("a0", "a1", "a2"):
        service.add_user(db, name, projects=["survey"])
    vote_all(db, "survey", {"a0": "1", "a1": "1", "a2": "2"})
    out = tmp_path / "export"
    summary = service.export(db, "survey", out)
    assert summary["benchmark_cases"] == 6
    assert json.loads((out / "benchmark.layout.json").read_text())["splits"] == ["north", "south"]
    bench = load_benchmark(out / "benchmark.jsonl")
    assert bench.splits == ("north", "south") and {c.split for c in bench.cases} == {"north", "south"}
    assert {c.tier for c in bench.cases} == {"hard"}  # 2-1 votes everywhere: agreement tiers are PersonaFeedback's


def _items(path: Path, splits: list[str]) -> Path:
    rows = [{"id": f"i{k}", "split": split, "user_id": "u1", "persona": {"tone": "brief"}, "question": f"Q{k}?",
             "answer_a": f"A{k}", "answer_b": f"B{k}"} for k, split in enumerate(splits)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def test_items_files_declare_their_splits(tmp_path: Path) -> None:
    path = _items(tmp_path / "items.jsonl", ["north", "south", "Nrth"])
    with pytest.raises(DataError, match=r"unknown split 'north'.*items\.layout\.json") as info:
        read_import(path, "pairwise")
    assert (info.value.line, info.value.field) == (1, "split")
    (tmp_path / "items.layout.json").write_text(json.dumps({"splits": ["north", "south"], "tiers": ["x"]}), "utf-8")
    with pytest.raises(DataError, match="unknown split 'Nrth'") as info:  # a typo never becomes a split
        read_import(path, "pairwise")
    assert (info.value.line, info.value.field) == (3, "split")
    _items(path, ["north", "south", "south"])
    fmt, items = read_import(path, "pairwise")
    assert fmt == "items" and [it.payload["split"] for it in items] == ["north", "south", "south"]
    # PersonaFeedback's names need no declaration
    fmt, items = read_import(_items(tmp_path / "pf.jsonl", ["specific", "general"]), "pairwise")
    assert len(items) == 2
