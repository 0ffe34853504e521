"""Argilla (v2) round trips. `data/argilla_sdk_*` were written by the `argilla` 2.8.0 SDK itself, without a
server (`data/make_argilla_sdk_files.py` says how); the other records here are built from the same SDK shapes
(`Record.to_dict`, `records.to_list(flatten=True)`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tailorbench.agreement import AgreeOptions, agreement_report
from tailorbench.interop import detect_format, export_items, read_export
from tests.interop.conftest import DATA, RATERS, TASKS, direct, items_file, labels_for, read_json, shown, unit_key

QUESTION = {"pairwise": "choice", "attributes": "judgment", "relevance": "relevant", "ab_rating": "score"}


def test_settings_equal_what_the_sdk_writes(tmp_path: Path) -> None:
    export_items(items_file("pairwise"), "pairwise", "argilla", tmp_path, seed=1)
    mine = read_json(tmp_path / "settings.json")
    assert mine == read_json(DATA / "argilla_sdk_pairwise_settings.json")
    # byte-equal too: the SDK writes json.dumps with its defaults and no final newline
    assert (tmp_path / "settings.json").read_bytes() == (DATA / "argilla_sdk_pairwise_settings.json").read_bytes()
    assert mine["distribution"] == {"strategy": "overlap", "min_submitted": 3}
    assert read_json(tmp_path / "records.json") == read_json(DATA / "argilla_export_pairwise_records.json")


@pytest.mark.parametrize("name", ["nested", "flat"])
def test_sdk_written_records_import(name: str) -> None:
    path = DATA / f"argilla_sdk_pairwise_records_{name}.json"
    assert detect_format(path) == "argilla"
    ratings, report = read_export(path)
    got = {(r.item, r.rater[-1]): r.label for r in ratings.ratings}
    # it0 and it3 were shown swapped (tb_swap "true"): "left" is answer B there, "right" answer A
    want = {("it0", "a"): "B", ("it0", "b"): "B", ("it0", "c"): "A", ("it1", "a"): "B", ("it1", "b"): "A",
            ("it2", "a"): "A", ("it2", "b"): "A", ("it3", "a"): "A", ("it3", "b"): "A", ("it3", "c"): "A"}
    if name == "flat":  # statuses kept: c's draft on it1 and discarded it2 are no ratings
        assert got == want
        assert report.not_rated == {"draft": 1, "discarded": 1} and not report.notes
    else:  # Dataset.to_disk writes no status: read as submitted, and said so
        assert got == {**want, ("it1", "c"): "A", ("it2", "c"): "A"}
        assert report.notes and "no status" in report.notes[0]
    assert report.confidence["not given"] == 1


def _records(export_dir: Path, task: str, labels: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    """The exported records as `records.to_list(flatten=True)` returns them after three annotators submitted."""
    out = []
    units = unit_key(export_dir)
    for rec in read_json(export_dir / "records.json"):
        unit = units[rec["metadata"]["tb_ref"]]
        key = f"{QUESTION[task]}.responses"
        row = {"id": rec["id"], **rec["fields"], **rec["metadata"],
               key: [shown(task, unit["tb_swap"], labels[unit["tb_unit"], r]) for r in RATERS],
               f"{key}.users": list(RATERS), f"{key}.status": ["submitted"] * 3}
        out.append(row)
    return out


@pytest.mark.parametrize("task", TASKS)
def test_round_trip_equals_the_labels_given_directly(tmp_path: Path, task: str) -> None:
    export_items(items_file(task), task, "argilla", tmp_path, seed=5, min_submitted=3)
    key = unit_key(tmp_path)
    labels = labels_for([key[r["metadata"]["tb_ref"]] for r in read_json(tmp_path / "records.json")], task)
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(tmp_path, task, labels)), encoding="utf-8")
    ratings, report = read_export(path, "argilla")
    assert {(r.item, r.rater): r.label for r in ratings.ratings} == labels
    assert report.ratings == len(labels) and not report.unmappable
    order = ["rejected", "uncertain", "accepted"] if task == "attributes" else None
    opts = AgreeOptions(50, 0)
    assert agreement_report(ratings, order, opts)["fleiss_kappa"] == agreement_report(
        direct(labels), order, opts)["fleiss_kappa"]


def test_unmappable_records_are_counted_with_their_line(tmp_path: Path) -> None:
    rows = [{"id": "x", "tb_unit": "x", "tb_task": "pairwise", "tb_swap": "maybe",
             "choice.responses": ["left"], "choice.responses.users": ["u"], "choice.responses.status": ["submitted"]},
            {"id": "y", "tb_unit": "y", "tb_task": "pairwise", "tb_swap": "false",
             "choice.responses": ["middle"], "choice.responses.users": ["u"],
             "choice.responses.status": ["submitted"]},
            ["not", "a", "record"]]
    path = tmp_path / "records.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    ratings, report = read_export(path, "argilla")
    assert not ratings.ratings and report.not_rated == {"unmappable": 3}
    assert [u["line"] for u in report.unmappable] == [1, 2, 3]
    assert "tb_swap" in report.unmappable[0]["reason"] and "middle" in report.unmappable[1]["reason"]


def test_hub_parquet_and_sdk_records(tmp_path: Path) -> None:
    """`to_hub` pushes the flattened records through `datasets` (parquet under data/, settings under .argilla/);
    records straight from the SDK (`to_list(flatten=True)`) read the same."""
    datasets = pytest.importorskip("datasets")
    rows = read_json(DATA / "argilla_sdk_pairwise_records_flat.json")
    hub = tmp_path / "hub"
    (hub / ".argilla").mkdir(parents=True)
    (hub / ".argilla" / "settings.json").write_text((DATA / "argilla_sdk_pairwise_settings.json").read_text())
    (hub / "data").mkdir()
    datasets.Dataset.from_list(rows).to_parquet(str(hub / "data" / "train-00000-of-00001.parquet"))
    want, _ = read_export(DATA / "argilla_sdk_pairwise_records_flat.json")
    for path in (hub, hub / "data" / "train-00000-of-00001.parquet"):
        assert detect_format(path) == "argilla"
        got, report = read_export(path)
        assert [(r.item, r.rater, r.label) for r in got.ratings] == [(r.item, r.rater, r.label) for r in want.ratings]
        assert report.not_rated == {"draft": 1, "discarded": 1}
    from tailorbench.interop.argilla import read_records

    sdk, report = read_records(rows)
    assert [(r.item, r.label) for r in sdk.ratings] == [(r.item, r.label) for r in want.ratings]
    assert report.sources == ["argilla-sdk"]
