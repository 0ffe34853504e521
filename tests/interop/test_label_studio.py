"""Label Studio round trips: tailorbench's export, annotated as Label Studio's documented JSON export format
(https://labelstud.io/guide/export, "Label Studio JSON format of annotated tasks": `annotations[].result`,
`completed_by`, `lead_time`, `was_cancelled`, `drafts`), read back into the long format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tailorbench.agreement import AgreeOptions, agreement_report
from tailorbench.interop import detect_format, export_items, read_export
from tests.interop.conftest import RATERS, TASKS, direct, items_file, labels_for, read_json, shown, unit_key


def _result(task: str, value: Any, confidence: int | None = None) -> list[dict[str, Any]]:
    """Result objects as Label Studio's documented export writes them for the exported config's controls."""
    if task == "pairwise":
        out = [{"id": "r1", "from_name": "choice", "to_name": "choice", "type": "pairwise",
                "value": {"selected": value}}]
        if confidence is not None:
            out.append({"id": "r2", "from_name": "confidence", "to_name": "answer1", "type": "rating",
                        "value": {"rating": confidence}})
        return out
    if task == "ab_rating":
        return [{"id": "r1", "from_name": "score", "to_name": "answer2", "type": "rating", "value": {"rating": value}}]
    name = "judgment" if task == "attributes" else "relevant"
    return [{"id": "r1", "from_name": name, "to_name": "attribute", "type": "choices", "value": {"choices": [value]}}]


def annotate(export_dir: Path, task: str, labels: dict[tuple[str, str], Any]) -> tuple[Path, list[dict[str, Any]]]:
    """tasks.json as Label Studio exports it after three annotators (user ids 1..3) submitted every task."""
    tasks = read_json(export_dir / "tasks.json")
    key = unit_key(export_dir)
    for n, t in enumerate(tasks, start=1):
        unit = key[t["data"]["tb_ref"]]
        t.update({"id": n, "project": 1, "drafts": [], "predictions": t.get("predictions", [])})
        t["annotations"] = [
            {"id": n * 10 + k, "completed_by": k + 1, "was_cancelled": False, "ground_truth": False, "lead_time": 4.5,
             "task": n, "result": _result(task, shown(task, unit["tb_swap"], labels[unit["tb_unit"], r]),
                                          confidence=2 if task == "pairwise" else None)}
            for k, r in enumerate(RATERS)]
    path = export_dir / "project-1-at-2026-12-01.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    return path, tasks


@pytest.mark.parametrize("task", TASKS)
def test_round_trip_equals_the_labels_given_directly(tmp_path: Path, task: str) -> None:
    summary = export_items(items_file(task), task, "label-studio", tmp_path, seed=3)
    tasks = read_json(tmp_path / "tasks.json")
    labels = labels_for([unit_key(tmp_path)[t["data"]["tb_ref"]] for t in tasks], task)
    path, _ = annotate(tmp_path, task, labels)
    ratings, report = read_export(path)
    assert detect_format(path) == "label-studio"
    ids = {str(k + 1): r for k, r in enumerate(RATERS)}
    got = {(r.item, ids[r.rater]): r.label for r in ratings.ratings}
    assert got == labels
    assert report.ratings == len(labels) and not report.unmappable and report.lead_time_s
    if task in ("pairwise", "ab_rating"):
        assert 0 < summary["swapped"] < summary["units"]  # both orders occur
    order = ["rejected", "uncertain", "accepted"] if task == "attributes" else None
    opts = AgreeOptions(50, 0)
    mine = agreement_report(ratings, order, opts)
    want = agreement_report(direct(labels), order, opts)
    assert mine["fleiss_kappa"] == want["fleiss_kappa"]
    assert mine["krippendorff_alpha"] == want["krippendorff_alpha"]


def test_config_per_task_type_is_xml_with_the_confidence_as_a_rating(tmp_path: Path) -> None:
    for task in TASKS:
        export_items(items_file(task), task, "label-studio", tmp_path / task)
        root = ET.fromstring((tmp_path / task / "config.xml").read_text(encoding="utf-8"))
        names = {el.get("name"): el.tag for el in root.iter() if el.get("name")}
        data_keys = set(read_json(tmp_path / task / "tasks.json")[0]["data"])
        assert {v.get("value", "")[1:] for v in root.iter("Text")} <= data_keys
        if task == "pairwise":
            assert names["choice"] == "Pairwise" and names["confidence"] == "Rating"
            assert root.find("Rating").get("maxRating") == "3"  # type: ignore[union-attr]


def test_cancelled_drafts_empty_ties_and_unmappable_rows_are_counted(tmp_path: Path) -> None:
    export_items(items_file("pairwise"), "pairwise", "label-studio", tmp_path, seed=3)
    tasks = read_json(tmp_path / "tasks.json")
    first, second, third, fourth = tasks[:4]
    first["annotations"] = [
        {"completed_by": 1, "result": _result("pairwise", "left", 3), "was_cancelled": False},
        {"completed_by": 2, "result": [], "was_cancelled": True},  # skipped
        {"completed_by": 3, "result": []},  # submitted empty
        # a user's config with a tie choice: an abstention
        {"completed_by": 4, "result": [{"from_name": "tie", "to_name": "answer1", "type": "choices",
                                        "value": {"choices": ["Tie"]}}]},
        {"completed_by": 5, "result": _result("pairwise", "up")},
    ]
    first["drafts"] = [{"result": _result("pairwise", "right"), "user": 6}]
    second["annotations"] = [{"completed_by": 1, "result": _result("pairwise", "left")},
                             {"completed_by": 1, "result": _result("pairwise", "right")}]  # twice by one user
    third["data"] = {"text": "a task tailorbench did not export"}
    third["annotations"] = [{"completed_by": 1, "result": _result("pairwise", "left")}]
    fourth["annotations"] = [{"completed_by": {"id": 9, "email": "x@example.org"},
                              "result": _result("pairwise", "right")}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    ratings, report = read_export(path, "label-studio")
    assert report.not_rated == {"cancelled (skipped)": 1, "empty": 1, "tie (abstention)": 1, "draft": 1,
                                "unmappable": 3}
    assert [(u["line"], u["reason"].split(":")[0]) for u in report.unmappable] == [
        (1, "unit 'it0'"), (2, f"rater '1' already rated 'it1' at {path}"), (3, "no item id at 'id'")]
    assert ratings.missing == report.not_rated
    assert {(r.item, r.rater) for r in ratings.ratings} == {("it0", "1"), ("it1", "1"), ("it3", "x@example.org")}
    assert report.annotations == report.ratings + sum(report.not_rated.values())


def test_judge_verdicts_ride_along_as_predictions(tmp_path: Path) -> None:
    verdicts = tmp_path / "judge.jsonl"
    verdicts.write_text("".join(json.dumps({"item": f"it{i}", "rater": "llm:gpt", "label": label, "group": "model"})
                                + "\n" for i, label in enumerate(["A", "B", "chosen", "rejected"])), encoding="utf-8")
    summary = export_items(items_file("pairwise"), "pairwise", "label-studio", tmp_path / "ls", seed=3,
                           predictions=[verdicts])
    assert summary["predictions"] == 4
    key = unit_key(tmp_path / "ls")
    for t, want in zip(read_json(tmp_path / "ls" / "tasks.json"), "ABAB"):
        (pred,) = t["predictions"]
        assert pred["model_version"] == "llm:gpt"
        assert pred["result"][0]["value"]["selected"] == shown("pairwise", key[t["data"]["tb_ref"]]["tb_swap"], want)
