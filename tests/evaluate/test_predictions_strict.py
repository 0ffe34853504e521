"""The one predictions reader (evaluate/results.py `parse_predictions`) checks each line strictly against
`schema.Prediction`: found by the CLI fuzz walk (tests/fuzz/test_fuzz_cli.py) — at 97f6c24 a line with an unknown
order, choice or setting, or a dropped required key, was read as given (`tailor report` exit 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.datasets.rows import read_appended_jsonl
from tailorbench.errors import DataError
from tailorbench.evaluate.results import known_setting_names, parse_predictions

#: a key left out of the line
DROP = object()
LINE = {"case_id": "c1", "judge": "longer", "setting": "persona", "order": "AB", "choice": "A", "correct": True,
        "status": "ok", "split": "general", "tier": "easy", "user_id": "u", "len_chosen": 3, "len_rejected": 2}


def _bytes(*rows: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


@pytest.mark.parametrize(("edit", "field"), [
    ({"order": "CD"}, "order"), ({"choice": "C"}, "choice"), ({"setting": "persnoa"}, "setting"),
    ({"status": "done"}, "status"), ({"correct": 1}, "correct"), ({"order": None}, "order"),
    ({"choice": DROP}, "choice"), ({"case_id": DROP}, "case_id"),
])
def test_a_bad_line_is_an_error_naming_file_line_and_field(edit: dict[str, Any], field: str) -> None:
    """Found by the CLI fuzz walk; exit 0 (read as given) at 97f6c24."""
    bad = {k: v for k, v in {**LINE, **edit}.items() if v is not DROP}
    with pytest.raises(DataError) as err:
        parse_predictions(Path("predictions.jsonl"), _bytes(LINE, bad))
    assert (err.value.line, err.value.field) == (2, field)


def test_good_lines_and_a_null_choice_and_partial_lines_are_read() -> None:
    """A failed call has a null choice; tools may write only the required keys (extra keys are kept)."""
    rows = parse_predictions(Path("p.jsonl"), _bytes(LINE, {**LINE, "case_id": "c2", "choice": None,
                                                               "status": "failed"},
                                                     {"case_id": "c3", "order": "BA", "choice": "B", "extra": 1}))
    assert [r["case_id"] for r in rows] == ["c1", "c2", "c3"]
    assert "persona" in known_setting_names()


def test_report_exits_2_naming_the_line(tmp_path: Path) -> None:
    """Found by the CLI fuzz walk; `tailor report` exit 0 on an unknown order at 97f6c24."""
    run = tmp_path / "run"
    api.eval("demo", judge="longer", out=run, n_boot=50)
    path = run / "predictions.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    path.write_text("\n".join([lines[0], json.dumps({**first, "order": "XY"}), *lines[1:]]) + "\n")
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "predictions.jsonl" in result.output and ":2" in result.output and "order" in result.output


def test_a_torn_last_line_is_still_cut_off_on_resume(tmp_path: Path) -> None:
    """The strict check reads whole lines only: `--resume`'s reader still cuts a torn last line."""
    path = tmp_path / "predictions.jsonl"
    whole = _bytes(LINE, {**LINE, "order": "BA"})
    path.write_bytes(whole + b'{"case_id": "c2", "ord')
    rows = read_appended_jsonl(path, parse_predictions)
    assert len(rows) == 2 and path.read_bytes() == whole


def test_resume_and_judge_run_check_the_manifest_field_by_field(tmp_path: Path) -> None:
    """Found by the CLI fuzz walk; `tailor eval --resume` and gen-eval's `--judge-run` took a manifest `seed` of
    true (exit 0) at 97f6c24: both now read it through `results.check_manifest_fields`, as report and view do."""
    from tailorbench.geneval.validation import summarise_run

    run = tmp_path / "run"
    api.eval("demo", judge="longer", out=run, n_boot=50)
    path = run / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "seed": True}))
    result = CliRunner().invoke(app, ["eval", "--resume", str(run)])
    assert result.exit_code == 2 and "manifest.json" in result.output and "seed" in result.output, result.output
    with pytest.raises(DataError) as err:
        summarise_run(run)
    assert err.value.field == "seed"


def test_a_predictions_folder_is_exit_2_naming_it(tmp_path: Path) -> None:
    """Found by the CLI fuzz walk; `tailor report` on a run whose predictions.jsonl is a folder was a traceback
    (IsADirectoryError at results.py) at 97f6c24."""
    run = tmp_path / "run"
    api.eval("demo", judge="longer", out=run, n_boot=50)
    (run / "predictions.jsonl").unlink()
    (run / "predictions.jsonl").mkdir()
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "predictions.jsonl" in result.output, result.output
