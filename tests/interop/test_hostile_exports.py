"""Tool exports as a careless user or a broken tool writes them: each is exit 2 with one line naming the file
(and line or field), never a traceback, and never an empty ratings file with exit 0."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.interop.conftest import DATA

LS = DATA / "label_studio_foreign_pairwise.json"
FLAT = DATA / "argilla_sdk_pairwise_records_flat.json"
POTATO = DATA / "potato2_pairwise"


def import_labels(tmp_path: Path, source: Path, *extra: str) -> tuple[int, str]:
    out = tmp_path / "ratings.jsonl"
    result = CliRunner().invoke(app, ["annotate", "import-labels", str(source), "--out", str(out), *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        assert not out.exists(), "a refused import wrote its output"
    return result.exit_code, result.stderr


def edited(tmp_path: Path, source: Path, change: Any) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / source.name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("key", "value", "says"), [
    ("annotations", {"x": 1}, "field '[1].annotations': expected a list of annotations, got an object"),
    ("annotations", "none", "got text"),
    ("drafts", 5, "field '[1].drafts': expected a list of drafts, got an integer"),
])
def test_label_studio_annotations_or_drafts_not_a_list(tmp_path: Path, key: str, value: Any, says: str) -> None:
    path = edited(tmp_path, LS, lambda tasks: tasks[0].__setitem__(key, value))
    code, err = import_labels(tmp_path, path)
    assert code == 2 and says in err and str(path) in err, err


def test_an_export_100000_levels_deep(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    for fmt in ("label-studio", "argilla"):
        code, err = import_labels(tmp_path, path, "--format", fmt)
        assert code == 2 and "levels deep" in err, err


def test_label_studio_read_as_argilla_says_which_format_it_is(tmp_path: Path) -> None:
    code, err = import_labels(tmp_path, LS, "--format", "argilla")
    assert code == 2 and "looks like a label-studio export" in err and "--input-format label-studio" in err, err


def test_an_argilla_records_object_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    path.write_text(json.dumps({"records": json.loads(FLAT.read_text(encoding="utf-8"))}))
    code, err = import_labels(tmp_path, path, "--format", "argilla")
    assert code == 2 and "'records'" in err and "list of records" in err, err


@pytest.mark.parametrize(("column", "value", "says"), [
    ("choice.responses.users", 5, "expected a list (one entry per response), got an integer"),
    ("choice.responses.status", {"a": 1}, "got an object"),
    ("choice.responses", "left", "got text"),
    ("choice.responses.users", ["u1"], "holds 1 entries for 3 responses"),
])
def test_argilla_flattened_responses_of_the_wrong_type(tmp_path: Path, column: str, value: Any, says: str) -> None:
    path = edited(tmp_path, FLAT, lambda records: records[1].__setitem__(column, value))
    code, err = import_labels(tmp_path, path, "--format", "argilla")
    assert code == 2 and f"{path}:2: field '{column}'" in err and says in err, err


def test_argilla_nested_responses_of_the_wrong_type(tmp_path: Path) -> None:
    path = edited(tmp_path, FLAT, lambda records: records[0].__setitem__("responses", [1, 2]))
    code, err = import_labels(tmp_path, path, "--format", "argilla")
    assert code == 2 and "field 'responses'" in err, err


@pytest.mark.parametrize(("key", "value", "field"), [
    ("data_files", 5, "data_files"), ("data_files", [1, 2], "data_files"),
    ("item_properties", [1, 2], "item_properties"), ("item_properties", {"id_key": [1]}, "item_properties.id_key"),
    ("output_annotation_dir", 7, "output_annotation_dir"),
])
def test_potato_config_fields_of_the_wrong_type(tmp_path: Path, key: str, value: Any, field: str) -> None:
    project = tmp_path / "project"
    shutil.copytree(POTATO, project)
    config = yaml.safe_load((project / "config.yaml").read_text(encoding="utf-8"))
    config[key] = value
    (project / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    code, err = import_labels(tmp_path, project, "--format", "potato")
    assert code == 2 and f"field '{field}'" in err and "config.yaml" in err, err


def test_potato_user_state_of_the_wrong_shape(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(POTATO, project)
    state = next(project.glob("annotation_output/*/user_state.json"))
    data = json.loads(state.read_text(encoding="utf-8"))
    data["instance_id_to_label_to_value"] = [1, 2]
    state.write_text(json.dumps(data), encoding="utf-8")
    code, err = import_labels(tmp_path, project, "--format", "potato")
    assert code == 2 and "instance_id_to_label_to_value" in err, err
    state.write_text("[" * 50_000)
    code, err = import_labels(tmp_path, project, "--format", "potato")
    assert code == 2 and str(state) in err, err


def test_an_import_that_yields_no_ratings_is_exit_2_with_the_reason(tmp_path: Path) -> None:
    path = edited(tmp_path, LS, lambda tasks: [t.__setitem__("annotations", []) for t in tasks])
    code, err = import_labels(tmp_path, path, "--format", "label-studio")
    assert code == 2 and "no ratings read" in err, err
