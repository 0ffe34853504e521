"""The console tells the truth about progress: the bars count verdicts and say so (cases x orders of each
setting), and the work between them (loading the benchmark, the statistics, the merged report) is a phase of its
own with the time it took, so a run that takes a minute never shows only bars at 0:00:00."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_eval_progress_counts_verdicts_and_shows_each_phase(tmp_path: Path) -> None:
    out = tmp_path / "x"
    result = subprocess.run([sys.executable, "-m", "tailorbench.cli.app", "eval", "--data", "demo", "--judge",
                             "longer", "--setting", "persona", "--setting", "none", "--limit", "5", "--out",
                             str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "cases/s" not in err and " cases " not in err.split("accuracy")[0]
    for setting in ("persona", "none"):  # 5 cases x 2 orders in each setting
        assert re.search(rf"^longer / {setting} .*\b10/10 verdicts\b", err, re.MULTILINE), err
        assert re.search(rf"^longer / {setting}: statistics \(results.json, report\): \d+\.\d s$", err,
                         re.MULTILINE), err
    assert re.search(r"^loading the benchmark demo: \d+\.\d s$", err, re.MULTILINE), err
    assert f"writing the merged report {out / 'report.md'} and report.html" in err
    quiet = subprocess.run([sys.executable, "-m", "tailorbench.cli.app", "eval", "--data", "demo", "--judge",
                            "longer", "--limit", "5", "--no-progress", "--out", str(tmp_path / "q")],
                           capture_output=True, text=True, timeout=300, check=False)
    assert quiet.returncode == 0 and "verdicts" not in quiet.stderr and "loading" not in quiet.stderr, quiet.stderr
