"""Potato round trips: tailorbench's project, with annotator output written as Potato documents and writes it
(`annotation_output/USER/annotated_instances.jsonl`, rows `{"id", "displayed_text", "label_annotations":
{scheme: {label: value}}, "span_annotations", "behavioral_data"}`; likert labels `scale_N`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tailorbench.agreement import AgreeOptions, agreement_report
from tailorbench.interop import detect_format, export_items, read_export
from tests.interop.conftest import RATERS, TASKS, direct, items_file, labels_for, shown, unit_key

SCHEME = {"pairwise": "choice", "attributes": "judgment", "relevance": "relevant", "ab_rating": "score"}


def _labels(task: str, value: Any) -> dict[str, dict[str, str]]:
    if task == "pairwise":
        return {"choice": {{"left": "Answer 1", "right": "Answer 2"}[value]: "1"}, "confidence": {"scale_2": "2"}}
    if task == "ab_rating":
        return {"score": {f"scale_{value}": str(value)}}
    return {SCHEME[task]: {str(value): "1"}}


def _write(project: Path, rater: str, rows: list[dict[str, Any]]) -> None:
    out = project / "annotation_output" / rater
    out.mkdir(parents=True, exist_ok=True)
    (out / "annotated_instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _units(project: Path) -> list[dict[str, Any]]:
    lines = (project / "data" / "units.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("task", TASKS)
def test_round_trip_equals_the_labels_given_directly(tmp_path: Path, task: str) -> None:
    export_items(items_file(task), task, "potato", tmp_path, seed=2)
    config = yaml.safe_load((tmp_path / "config.yaml").read_text(encoding="utf-8"))
    assert config["data_files"] == ["data/units.jsonl"] and config["annotation_schemes"]
    units = _units(tmp_path)
    key = unit_key(tmp_path)
    labels = labels_for([key[u["tb_ref"]] for u in units], task)
    for rater in RATERS:
        _write(tmp_path, rater, [{"id": u["id"], "displayed_text": u["text"], "label_annotations": _labels(
            task, shown(task, key[u["tb_ref"]]["tb_swap"], labels[key[u["tb_ref"]]["tb_unit"], rater])),
                                  "span_annotations": [], "behavioral_data": {}} for u in units])
    assert detect_format(tmp_path) == "potato"
    ratings, report = read_export(tmp_path)
    assert {(r.item, r.rater): r.label for r in ratings.ratings} == labels
    assert not report.unmappable
    opts = AgreeOptions(50, 0)
    assert agreement_report(ratings, None, opts)["fleiss_kappa"] == agreement_report(
        direct(labels), None, opts)["fleiss_kappa"]


def test_empty_unknown_and_unmappable_rows_are_counted(tmp_path: Path) -> None:
    export_items(items_file("pairwise"), "pairwise", "potato", tmp_path, seed=2)
    ref = {unit["tb_unit"]: r for r, unit in unit_key(tmp_path).items()}  # the instance ids are the references
    _write(tmp_path, "ann1", [
        {"id": ref["it0"], "label_annotations": {}},
        {"id": "nope", "label_annotations": {"choice": {"Answer 1": "1"}}},
        {"id": ref["it1"], "label_annotations": {"choice": {"Answer 1": "1", "Answer 2": "2"}}},
        {"id": ref["it2"], "label_annotations": {"choice": {"Answer 2": "2"}}},
    ])
    ratings, report = read_export(tmp_path, "potato")
    assert report.not_rated == {"empty": 1, "unmappable": 2}
    assert [u["line"] for u in report.unmappable] == [2, 3]
    assert [(r.item, r.rater, r.line) for r in ratings.ratings] == [("it2", "ann1", 4)]


@pytest.mark.parametrize(("change", "field"), [
    (lambda s: s[0].update(annotation_type="radoi"), "annotation_schemes.0.annotation_type"),
    (lambda s: s[0].update(annotation_type=["radio"]), "annotation_schemes.0.annotation_type"),
    (lambda s: s[0].update(name=3), "annotation_schemes.0.name"),
    (lambda s: s[0].update(labels="Answer 1"), "annotation_schemes.0.labels"),
    (lambda s: s[1].update(size="3"), "annotation_schemes.1.size"),
    (lambda s: s.__setitem__(1, "likert"), "annotation_schemes.1"),
])
def test_a_scheme_of_an_unknown_type_or_a_wrong_typed_field_is_named(tmp_path: Path, change: Any,
                                                                     field: str) -> None:
    """Found by the CLI fuzz walk: with the labels in user_state.json, a scheme of an unknown type or a
    wrong-typed field was read as given (exit 0 at 97f6c24); now a DataError naming config.yaml and the field."""
    import shutil

    from tailorbench.errors import DataError

    project = tmp_path / "p"
    shutil.copytree(Path(__file__).parent / "data" / "potato2_pairwise", project)
    config = yaml.safe_load((project / "config.yaml").read_text(encoding="utf-8"))
    change(config["annotation_schemes"])
    (project / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert list(project.glob("annotation_output/*/user_state.json"))
    with pytest.raises(DataError) as err:
        read_export(project, fmt="potato")
    assert err.value.field == field and str(err.value.path).endswith("config.yaml")
