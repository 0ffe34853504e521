"""The console tells the truth about progress: the bars count verdicts and say so (cases x orders of each
setting), and the work between them (loading the benchmark, the statistics, the merged report) is a phase of its
own, said with the time it took when it took a while, so a run that takes a minute never shows only bars at
0:00:00; an error found at once stays the one line on stderr."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.evaluate import judging


def _eval(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tailorbench.cli.app", "eval", "--data", "demo", "--judge", "longer",
                           "--limit", "5", *args], capture_output=True, text=True, timeout=300, check=False)


def test_eval_progress_counts_verdicts(tmp_path: Path) -> None:
    result = _eval("--setting", "persona", "--setting", "none", "--out", str(tmp_path / "x"))
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "cases/s" not in err and " cases " not in err.split("accuracy")[0]
    for setting in ("persona", "none"):  # 5 cases x 2 orders in each setting
        assert re.search(rf"^longer / {setting} .*\b10/10 verdicts\b", err, re.MULTILINE), err
    quiet = _eval("--no-progress", "--out", str(tmp_path / "q"))
    assert quiet.returncode == 0 and "verdicts" not in quiet.stderr, quiet.stderr


def test_each_phase_says_what_it_did_and_how_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judging, "PHASE_SAID_FROM_S", 0.0)  # every phase said, however quick
    out = tmp_path / "x"
    result = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "longer", "--setting", "persona",
                                      "--setting", "none", "--limit", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert re.search(r"^loading the benchmark demo: \d+\.\d s$", err, re.MULTILINE), err
    for setting in ("persona", "none"):
        assert re.search(rf"^longer / {setting}: statistics \(results.json, report\): \d+\.\d s$", err,
                         re.MULTILINE), err
    assert f"writing the merged report {out / 'report.md'} and report.html" in err


def test_an_error_found_at_once_is_the_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _eval("--no-progress", "--out", str(run)).returncode == 0
    (run / "predictions.jsonl").write_text("[1]\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "tailorbench.cli.app", "eval", "--resume", str(run)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 2 and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, \
        result.stderr
