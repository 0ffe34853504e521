"""A batch state file edited by hand (RUN/batches/*.json) is named, never misread and never a traceback: before
(base 97f6c24) `"entries": "x"` was iterated character by character and ended in a TypeError in `tailor batch
status` and on `--resume`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.models.batch_state import STATE_DIR, VERSION, read_state


def _state(run: Path, **changes: object) -> Path:
    body = {"version": VERSION, "spec": "openai:gpt-4o-mini", "provider": "openai", "options": {},
            "entries": [{"chunk": "c0", "status": "submitted", "created": 1.0, "custom_ids": ["a", "b"],
                         "batch_id": "batch_1"}]}
    body.update(changes)
    path = run / STATE_DIR / "0123456789abcdef.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


@pytest.mark.parametrize("changes", [
    {"entries": "x"},
    {"entries": [{"chunk": "c0", "status": "submitted", "custom_ids": "ab"}]},
    {"entries": [{"chunk": "c0", "status": "running", "custom_ids": ["a"]}]},
    {"entries": [{"chunk": 5, "status": "ended", "custom_ids": ["a"]}]},
    {"spec": ["openai:gpt-4o-mini"]},
])
def test_a_damaged_state_file_is_exit_2_naming_it(tmp_path: Path, changes: dict[str, object]) -> None:
    path = _state(tmp_path, **changes)
    before = path.read_bytes()
    result = CliRunner().invoke(app, ["batch", "status", str(tmp_path)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(path) in errors[0] and "damaged batch state" in errors[0], result.output
    assert "Traceback" not in result.output
    assert path.read_bytes() == before


def test_a_good_state_file_reads(tmp_path: Path) -> None:
    assert read_state(_state(tmp_path))["entries"][0]["batch_id"] == "batch_1"
