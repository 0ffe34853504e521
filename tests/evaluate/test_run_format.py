"""The run log (issue 43 point 2): manifest.json, results.json, each predictions line and leaderboard.json are
written from the models that read them, strictly, with `format_version`; a format-1 run (no version) is migrated
in memory when adding the version is all it takes and refused otherwise, naming the file and the tailorbench
that wrote it; a results.json edited by hand is never trusted (issue 42); `tb.stages.*` are typed for mypy."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from tailorbench.errors import DataError
from tailorbench.evaluate.config import EvalConfig, load_config, validate_config
from tailorbench.evaluate.results import compute_results, load_results, read_manifest, read_predictions
from tailorbench.evaluate.runner import run_eval
from tailorbench.runlog import FORMAT_VERSION, EvalResults, Leaderboard, read_run_file
from tailorbench.schema import Prediction, RunManifest
from tests.helpers.mypy_run import run_mypy


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("format") / "run"
    run_eval(EvalConfig(data="demo", judge="longer", limit=6, n_boot=20), run, progress=False)
    return run


@pytest.fixture
def run(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(made, copy)
    return copy


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2), "utf-8")


def test_every_file_is_written_from_its_model_and_reads_back_strictly(made: Path) -> None:
    for name, model in (("manifest.json", RunManifest), ("results.json", EvalResults)):
        data = _json(made / name)
        assert next(iter(data)) == "format_version" and data["format_version"] == FORMAT_VERSION
        assert read_run_file(model, made / name, data).to_file() == data  # what is written is what is read
    lines = (made / "predictions.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 12
    for number, line in enumerate(lines, 1):
        row = json.loads(line)
        assert row["format_version"] == FORMAT_VERSION
        assert read_run_file(Prediction, made / "predictions.jsonl", row, line=number).model_dump() == \
            {k: row[k] for k in Prediction.model_fields}  # every field written, none other
        assert set(row) == set(Prediction.model_fields)


def test_a_format_1_run_is_read_by_adding_the_version(run: Path) -> None:
    """What the version before this one wrote: the same files without `format_version`."""
    expected = _json(run / "results.json")
    manifest = _json(run / "manifest.json")
    del manifest["format_version"]
    _write(run / "manifest.json", manifest)
    old_lines = [{k: v for k, v in json.loads(line).items() if k != "format_version"}
                 for line in (run / "predictions.jsonl").read_text("utf-8").splitlines()]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old_lines), "utf-8")
    results = {k: v for k, v in expected.items() if k != "format_version"}
    _write(run / "results.json", results)
    assert read_manifest(run)["format_version"] == FORMAT_VERSION
    assert load_config(run).judge == "longer"
    assert len(read_predictions(run)) == 12
    again = load_results(run)  # a format-1 results.json is derived data: recomputed, not migrated
    assert {k: v for k, v in again.items() if k != "predictions_sha256"} == \
        {k: v for k, v in expected.items() if k != "predictions_sha256"}


@pytest.mark.parametrize(("edit", "field"), [
    ({"kept_by_an_old_version": 1}, "kept_by_an_old_version"), ({"seed": "0"}, "seed"), ({"n_cases": True}, "n_cases"),
])
def test_a_format_1_manifest_that_is_not_format_2_is_refused_naming_who_wrote_it(
        run: Path, edit: dict[str, Any], field: str) -> None:
    manifest = {k: v for k, v in _json(run / "manifest.json").items() if k != "format_version"}
    _write(run / "manifest.json", {**manifest, **edit})
    for read in (read_manifest, load_config):
        with pytest.raises(DataError) as err:
            read(run)
        message = str(err.value)
        assert str(err.value.path) == str(run / "manifest.json") and err.value.field == field, message
        assert "written by tailorbench " in message and "run format 1" in message, message
        assert "rerun it: `tailor eval --data demo --judge longer --setting persona --out NEW_DIR`" in message


def test_a_manifest_without_a_field_is_refused_in_either_format(run: Path) -> None:
    manifest = _json(run / "manifest.json")
    del manifest["config"]
    _write(run / "manifest.json", manifest)
    with pytest.raises(DataError) as err:
        read_manifest(run)
    assert err.value.field == "config" and "not a run manifest as tailorbench writes it" in str(err.value)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, "2", True])
def test_a_version_this_tailorbench_does_not_know_is_refused(run: Path, version: Any) -> None:
    _write(run / "manifest.json", {**_json(run / "manifest.json"), "format_version": version})
    with pytest.raises(DataError) as err:
        read_manifest(run)
    assert err.value.field == "format_version"
    if version == FORMAT_VERSION + 1:
        assert "upgrade tailorbench" in str(err.value)


@pytest.mark.parametrize(("path", "value"), [
    (("metrics", "all", "accuracy"), "0.99"),  # a number written as text
    (("metrics", "all", "n"), True),
    (("metrics", "all", "note"), "hand edit"),  # a key the model does not declare, deep inside
    (("users", "hardest"), [{"user_id": 7, "n": 1, "accuracy": 1.0}]),
    (("reliability", "cells", "all", "position", "pairs"), "many"),
    (("failures", "failed"), -0.5),
    (("judge",), 5),
])
def test_a_hand_edited_results_json_that_keeps_its_digest_is_not_trusted(
        run: Path, path: tuple[str, ...], value: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 42: a hand-edited results.json that keeps its predictions digest was trusted (a traceback in the
    reports, or its numbers shown as the run's). Now it is recomputed from the predictions, with a warning."""
    expected = _json(run / "results.json")
    edited = _json(run / "results.json")
    node = edited
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    _write(run / "results.json", edited)
    with caplog.at_level(logging.WARNING):
        again = load_results(run)
    assert again == expected
    assert "results.json" in caplog.text and "recomputed" in caplog.text


def test_an_edited_number_of_the_right_type_is_read_as_written(run: Path) -> None:
    """What strict reading does not claim: a value of the right type is the file's (the digest guards the
    predictions, not the derived numbers)."""
    edited = _json(run / "results.json")
    edited["metrics"]["all"]["accuracy"] = 0.25
    _write(run / "results.json", edited)
    assert load_results(run)["metrics"]["all"]["accuracy"] == 0.25


def test_results_from_the_lines_just_written_equal_those_read_back(made: Path) -> None:
    assert compute_results(made) == _json(made / "results.json")


def test_a_predictions_line_of_format_2_is_read_whole(run: Path) -> None:
    lines = (run / "predictions.jsonl").read_text("utf-8").splitlines()
    row = json.loads(lines[3])
    for bad, field in (({**row, "note": 1}, "note"), ({k: v for k, v in row.items() if k != "raw"}, "raw"),
                       ({**row, "prompt_tokens": 1.5}, "prompt_tokens")):
        (run / "predictions.jsonl").write_text("\n".join([*lines[:3], json.dumps(bad), *lines[4:]]) + "\n")
        with pytest.raises(DataError) as err:
            read_predictions(run)
        assert (err.value.line, err.value.field) == (4, field), str(err.value)


def test_the_leaderboard_is_written_from_its_model() -> None:
    board = Leaderboard(suite="s", benchmarks=["a", "b"],
                        rows={"longer · persona": {"a": {"accuracy": 0.5, "ci": [0.4, 0.6], "n": 10, "run": "x"},
                                                   "b": None}},
                        not_run={"longer · persona": {"b": "needs an llm: judge"}}).to_file()
    assert next(iter(board)) == "format_version"
    assert read_run_file(Leaderboard, Path("leaderboard.json"), json.loads(json.dumps(board))).to_file() == board
    with pytest.raises(DataError):
        read_run_file(Leaderboard, Path("leaderboard.json"), {**board, "rows": {"r": {"a": 1}}})


def test_a_config_is_validated_once() -> None:
    """`validate_config` marks the copy it returns: the runner, a matrix of runs and a resume take it as checked;
    the mark is not a field, so the manifest does not hold it."""
    from dataclasses import asdict

    checked = validate_config(EvalConfig(data="demo", n_boot=20))
    assert validate_config(checked) is checked
    assert "_tailorbench_checked" not in asdict(checked)
    fresh = EvalConfig(data="demo", n_boot=0)
    with pytest.raises(Exception, match="--n-boot"):
        validate_config(fresh)


def test_stage_verbs_are_typed_for_mypy(tmp_path: Path) -> None:
    """`tb.stages.*` have their verbs' own parameters and return the pydantic models (not `Callable[..., Any]`)."""
    script = tmp_path / "stages_types.py"
    script.write_text("import tailorbench as tb\n"
                      "reveal_type(tb.stages.extract)\n"
                      "reveal_type(tb.stages.summary)\n"
                      "out: int = tb.stages.baseline\n", "utf-8")
    done = run_mypy("stage-verbs", [str(script)])
    out = done.stdout
    assert "def (conversations: str | pathlib.Path, model: str" in out and "-> tailorbench.api." in out, out
    assert "StageOutput" in out and "StageSummary" in out, out
    assert "Callable[..., Any]" not in out and "incompatible types in assignment" in out.lower(), out


@pytest.mark.parametrize(("path", "value", "field"), [
    (("metrics", "specific", "easy", "note"), 1, "metrics.specific.easy.note"),  # a split's cells
    (("metrics", "all", "n"), "x", "metrics.all.n"),  # the overall cell
    (("reliability", "cells", "all", "position", "pairs"), True, "reliability.cells.all.position.pairs"),
])
def test_an_error_in_results_json_names_the_key_the_file_holds(made: Path, path: tuple[str, ...], value: Any,
                                                                field: str) -> None:
    """A `metrics` (or reliability) entry is a cell or a split's cells: the error names the place the file meant,
    not the union member pydantic tried."""
    data = _json(made / "results.json")
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(DataError) as err:
        read_run_file(EvalResults, made / "results.json", data)
    assert err.value.field == field, str(err.value)


def test_a_suite_record_is_written_from_its_model_and_read_strictly(tmp_path: Path) -> None:
    """suite.json (what `tb.resume(DIR)` finishes a suite from) is a run-log file too."""
    from tailorbench.benchmarks.suite import SUITE_FILE, Suite, SuiteBenchmark, read_suite_record
    from tailorbench.runlog import SuiteRecord

    suite = Suite(name="s", benchmarks=[SuiteBenchmark(name="demo", data="demo")], judges=["longer"])
    from dataclasses import asdict

    record = SuiteRecord.model_validate({"suite": asdict(suite), "skip_missing": True}).to_file()
    assert next(iter(record)) == "format_version"
    _write(tmp_path / SUITE_FILE, record)
    assert read_suite_record(tmp_path) == (suite, True)
    record["suite"]["seed"] = "0"
    _write(tmp_path / SUITE_FILE, record)
    with pytest.raises(DataError) as err:
        read_suite_record(tmp_path)
    assert err.value.field == "suite.seed" and SUITE_FILE in str(err.value)
