"""Failed verdicts in results and reports, the exit-code-3 rule, errors out of the judge, the run lock and
Ctrl-C, with scripted judges (tests/evaluate/scripted.py) on the bundled demo data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tests.evaluate.scripted  # noqa: F401  (registers the scripted judges)
from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.errors import ConfigError, CredentialsError
from tailorbench.evaluate.lock import RunInProgressError, RunLock, is_locked, run_state
from tailorbench.evaluate.results import check_run, compute_results, load_results
from tailorbench.evaluate.runner import EvalConfig, RunInterrupted, add_counts, run_eval
from tailorbench.failures import FailureCheck, check_max_failed, first_causes
from tests.evaluate.scripted import BOOM

REPO = Path(__file__).resolve().parents[2]


def _rows(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines() if line.strip()]


def _manifest(run: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run / "manifest.json").read_text())
    return data


def _eval(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["eval", "--data", "demo", "--n-boot", "50", "--no-progress", *args])
    return result.exit_code, result.stdout, result.stderr


# --- the rule ----------------------------------------------------------------------------------------------


def test_failure_rule() -> None:
    assert not FailureCheck("r", 0, 10).exceeded
    assert FailureCheck("r", 1, 10).exceeded  # default 0: any failure
    assert not FailureCheck("r", 1, 10, max_failed=0.1).exceeded  # at the threshold is allowed
    assert FailureCheck("r", 2, 10, max_failed=0.1).exceeded
    assert FailureCheck("r", 10, 10, max_failed=1.0).exceeded  # every item failed: never a success
    assert not FailureCheck("r", 0, 0).exceeded  # nothing to do is not a failure
    message = FailureCheck("run x", 3, 12, 0.05, ["server: HTTP 500 (x3)"]).message()
    assert message == ("run x: 3 of 12 verdicts failed (25.0%, more than --max-failed 5%); "
                       "first errors: server: HTTP 500 (x3)")
    assert FailureCheck("run x", 4, 4).message() == "run x: all 4 verdicts failed"
    assert first_causes(["a\nb", "a b", None, "c", "d", "e"]) == ["a b (x2)", "c", "d"]
    assert check_max_failed(None) == 0.0 and check_max_failed(0.25) == 0.25
    for bad in (-0.1, 1.5):
        with pytest.raises(ConfigError, match="between 0 and 1"):
            check_max_failed(bad)


def test_call_counters_of_several_processes_add_up() -> None:
    a = {"requests": 3, "retries": 1, "errors": {"server": 1}, "cost_usd": None, "transport": "lean"}
    b = {"requests": 2, "retries": 2, "errors": {"server": 1, "timeout": 1}, "cost_usd": 0.5, "transport": "lean"}
    assert add_counts(a, b) == {"requests": 5, "retries": 3, "errors": {"server": 2, "timeout": 1},
                                "cost_usd": 0.5, "transport": "lean"}


# --- results, reports and the exit code -----------------------------------------------------------------------


def test_every_verdict_failed_is_exit_3_with_the_first_errors(tmp_path: Path) -> None:
    run = tmp_path / "fail"
    code, _, stderr = _eval("--judge", "scripted:fail", "--limit", "10", "--out", str(run))
    assert code == 3, stderr
    assert "all 20 verdicts failed" in stderr and "HTTP 500: boom" in stderr and "(x20)" in stderr
    results = json.loads((run / "results.json").read_text())
    failures = results["failures"]
    assert (failures["failed"], failures["verdicts"], failures["exceeded"]) == (20, 20, True)
    assert failures["by_kind"] == {"server": 20} and failures["first_errors"] == [f"{BOOM} (x20)"]
    assert results["status"] == "finished" and results["metrics"]["all"]["failed"] == 20
    report = (run / "report.md").read_text()
    assert "## Failed calls" in report and "yes (exit 3)" in report and "HTTP 500: boom" in report
    assert "Failed calls" in (run / "report.html").read_text()
    # every verdict failed: no --max-failed makes that a success
    code, _, _ = _eval("--resume", str(run), "--max-failed", "1")
    assert code == 3
    assert check_run(load_results(run)).exceeded and api.run_failures(run).exceeded


def test_max_failed_threshold_and_invalid_verdicts(tmp_path: Path) -> None:
    code, _, stderr = _eval("--judge", "scripted:half", "--limit", "10", "--out", str(tmp_path / "half"))
    assert code == 3 and "10 of 20 verdicts failed (50.0%, more than --max-failed 0%)" in stderr
    code, _, stderr = _eval("--judge", "scripted:half", "--limit", "10", "--max-failed", "0.5",
                            "--out", str(tmp_path / "half-ok"))
    assert code == 0, stderr
    assert json.loads((tmp_path / "half-ok" / "results.json").read_text())["failures"]["max_failed"] == 0.5
    # the run remembers its threshold; --resume may replace it
    assert api.run_failures(tmp_path / "half-ok").exceeded is False
    assert api.run_failures(tmp_path / "half-ok", max_failed=0.1).exceeded is True
    code, _, stderr = _eval("--resume", str(tmp_path / "half-ok"), "--max-failed", "0.1")
    assert code == 3, stderr
    # invalid verdicts are the judge's answers: reported, never a failure
    code, _, stderr = _eval("--judge", "scripted:invalid", "--limit", "5", "--out", str(tmp_path / "inv"))
    assert code == 0, stderr
    results = json.loads((tmp_path / "inv" / "results.json").read_text())
    assert results["metrics"]["all"]["invalid"] == 10 and results["failures"]["failed"] == 0
    assert "## Failed calls" not in (tmp_path / "inv" / "report.md").read_text()


def test_a_matrix_exits_with_the_worst_run(tmp_path: Path) -> None:
    code, stdout, stderr = _eval("--judge", "longer", "--judge", "scripted:fail", "--limit", "5", "--json",
                                 "--out", str(tmp_path / "m"))
    assert code == 3 and len(json.loads(stdout)) == 2  # both runs written and printed
    assert stderr.count("error:") == 1 and "error: scripted:fail / persona" in stderr


def test_bad_max_failed_is_exit_2_before_any_work(tmp_path: Path) -> None:
    code, _, stderr = _eval("--judge", "longer", "--max-failed", "5", "--out", str(tmp_path / "x"))
    assert code == 2 and "--max-failed" in stderr and not (tmp_path / "x").exists()


# --- an exception out of the judge ------------------------------------------------------------------------------


def test_an_error_out_of_the_judge_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    run = tmp_path / "raise"
    # batches of 4; the second raises: the first (and any batch that finished before) stays on disk
    with pytest.raises(CredentialsError, match="refused the credentials"):
        run_eval(EvalConfig(judge="scripted:raise", limit=10, n_boot=50), run, progress=False)
    manifest = _manifest(run)
    assert manifest["status"] == "stopped" and "CredentialsError" in str(manifest["error"])
    rows = _rows(run)
    assert rows and len(rows) % 4 == 0 and len(rows) < 20
    assert not is_locked(run)  # released on the way out
    results = load_results(run)
    assert results["status"] == "stopped"
    assert any("stopped by an error" in w and "tailor eval --resume" in w for w in results["warnings"])
    # through the CLI: exit 2, one line naming the error
    code, _, stderr = _eval("--judge", "scripted:raise", "--limit", "10", "--out", str(tmp_path / "cli"))
    assert code == 2 and stderr.startswith("error: scripted: the server refused the credentials")


# --- the lock and interrupted runs ------------------------------------------------------------------------------


def test_a_locked_run_is_in_progress_and_a_free_running_one_interrupted(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_eval(EvalConfig(judge="random", limit=8, n_boot=50), run, progress=False)
    full = _rows(run)
    with RunLock(run):
        with pytest.raises(RunInProgressError, match="run is in progress"):
            api.resume(run)
        code, _, stderr = _eval("--resume", str(run))
        assert code == 2 and "run is in progress" in stderr and f"process {os.getpid()}" in stderr
    # another live process holding the lock: the same
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from tailorbench.evaluate.lock import RunLock; "
         f"lock = RunLock(Path({str(run)!r})).acquire(); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert is_locked(run) and run_state(run, "running") == "running"
        with pytest.raises(RunInProgressError, match=f"process {holder.pid}"):
            api.resume(run)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    # what a kill -9 leaves: manifest `running`, some lines, no results, a free lock
    manifest = _manifest(run)
    manifest["status"] = "running"
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in full[:5]))
    (run / "results.json").unlink()
    assert run_state(run, "running") == "interrupted"
    board = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "board")])
    assert board.exit_code == 0, board.output
    written = (tmp_path / "board" / "report.md").read_text(encoding="utf-8")
    assert f"wrote {tmp_path / 'board' / 'report.md'}" in board.stdout
    assert "| interrupted |" in written and f"tailor eval --resume {run}" in written
    code, _, stderr = _eval("--resume", str(run))
    assert code == 0, stderr
    assert "was interrupted (its process ended without finishing" in stderr and "5 verdicts on disk" in stderr
    assert len(_rows(run)) == len(full) and _manifest(run)["status"] == "finished"


# --- Ctrl-C -----------------------------------------------------------------------------------------------------


def test_first_ctrl_c_finishes_the_batches_in_flight_and_says_how_to_resume(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    # batches of 4, four in flight; the second batch sends SIGINT: the four started batches finish, no fifth starts
    with pytest.raises(RunInterrupted) as caught:
        run_eval(EvalConfig(judge="scripted:sigint", limit=20, n_boot=50), run, progress=False)
    assert str(caught.value) == f"tailor eval --resume {run}"
    err = capfd.readouterr().err
    assert "interrupt: no new calls" in err and f"16 of 40 verdicts are in {run}/predictions.jsonl" in err
    assert len(_rows(run)) == 16 and _manifest(run)["status"] == "interrupted"
    assert not is_locked(run) and not (run / "results.json").exists()
    board = load_results(run)
    assert board["status"] == "interrupted" and board["cases_judged"] == 8
    # a resume judges only the missing 24; its second batch signals again: 16 more, interrupted (the CLI: 130)
    code, _, stderr = _eval("--resume", str(run))
    assert code == 130 and f"32 of 40 verdicts are in {run}" in stderr and "resume with:" in stderr
    assert len(_rows(run)) == 32
    # the last 8 are two batches, both in flight when the signal comes: the work is done, the run finishes
    api.resume(run)
    rows = _rows(run)
    assert len(rows) == 40 and len({(r["case_id"], r["order"]) for r in rows}) == 40
    assert _manifest(run)["status"] == "finished"
    assert compute_results(run)["metrics"]["all"]["n"] == 20


def test_second_ctrl_c_exits_at_once_with_130(tmp_path: Path) -> None:
    """In a real process: the second SIGINT ends it immediately (os._exit), keeping every line written."""
    run = tmp_path / "run"
    code = ("import sys; import tests.evaluate.scripted; from tailorbench.cli.app import main; "
            f"sys.argv = ['tailor', 'eval', '--data', 'demo', '--limit', '20', '--judge', 'scripted:sigint', "
            f"'--judge-option', 'sigint=2', '--no-progress', '--out', {str(run)!r}]; main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert "interrupted again: exiting now" in proc.stderr
    assert _manifest(run)["status"] == "running" and run_state(run, "running") == "interrupted"
    rows = _rows(run)
    assert len(rows) % 4 == 0 and len(rows) <= 12  # whole batches only (the first ones, maybe)
