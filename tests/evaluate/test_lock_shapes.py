"""A run directory's `run.lock` of the wrong shape (a directory, a dangling link) is exit 2 naming it: before
(base 97f6c24) `tailor eval` ended in an IsADirectoryError traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app


@pytest.mark.parametrize("shape", ["directory", "dangling link"])
def test_a_lock_that_is_not_a_file_is_exit_2(tmp_path: Path, shape: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    lock = run / "run.lock"
    if shape == "directory":
        lock.mkdir()
    else:
        lock.symlink_to(tmp_path / "nowhere")
    result = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "longer", "--out", str(run)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    # a directory is named as the lock; a folder holding only a dangling link is not a run's folder at all
    assert "run.lock" in errors[0] if shape == "directory" else "did not write" in errors[0]
    assert not (tmp_path / "nowhere").exists() and not (run / "predictions.jsonl").exists()
