"""`tailor eval` in batch mode (`--judge-option batch=true`, `--batch`) against the conformance test server: the
same verdicts as the synchronous run at half its cost (results.json and the report show the batch cost beside the
synchronous one), a kill -9 while batches run and a resume that submits no request twice and loses no verdict,
the exit codes of a wrong key, a server without batch support, an oversized request and an unreadable result line
(docs/cli.md); `tailor batch status|cancel RUN`; Ctrl-C while batches run (exit 130, the resume command, nothing
sent twice on resume); `tailor gen-eval --batch` killed with kill -9 while its batches run, then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.models.batch_state import state_files
from tests.helpers.batch_server import BatchServer

TAILOR = str(Path(sys.executable).parent / "tailor")
CASES = 12  # x 2 orders
BATCH = ["--judge-option", "batch=true", "--judge-option", "batch_poll_s=0.02", "--judge-option",
         "batch_wait_s=0.05"]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BatchServer]:
    with BatchServer(tmp_path / "server") as srv:
        yield srv


def _judge(backend: str, server: BatchServer) -> str:
    if backend == "openai":
        return f"llm:openai:gpt-4o-mini@{server.url}/v1"
    return f"llm:anthropic:claude-haiku-4-5@{server.url}"


def _eval(judge: str, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["eval", "--data", "demo", "--limit", str(CASES), "--n-boot", "20",
                                    "--judge", judge, "--out", str(out), "--no-progress", *extra])


def _choices(run: Path) -> dict[tuple[str, str], Any]:
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines() if line.strip()]
    out = {(r["case_id"], r["order"]): r["choice"] for r in rows}
    assert len(out) == len(rows)  # one line per case x order: nothing written twice
    return out


def _cost(run: Path) -> float:
    return float(json.loads((run / "results.json").read_text())["usage"]["cost_usd"])


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_batch_verdicts_equal_the_sync_run_at_half_the_cost(backend: str, server: BatchServer,
                                                            tmp_path: Path) -> None:
    sync = _eval(_judge(backend, server), tmp_path / "sync", "--judge-option", "cache_policy=off")
    assert sync.exit_code == 0, sync.output
    batch = _eval(_judge(backend, server), tmp_path / "batch", *BATCH)
    assert batch.exit_code == 0, batch.output
    assert _choices(tmp_path / "batch") == _choices(tmp_path / "sync")
    assert len(server.submitted) == len(set(server.submitted)) == 2 * CASES  # each unique call once
    assert _cost(tmp_path / "batch") == pytest.approx(_cost(tmp_path / "sync") / 2)
    manifest = json.loads((tmp_path / "batch" / "manifest.json").read_text())
    described = manifest["config"]["judge_description"]["model"]["batch"]
    assert described["requests"]["answered"] == 2 * CASES and described["batches"]["ended"] >= 1
    assert described["sync_cost_usd"] == pytest.approx(2 * described["cost_usd"])
    again = _eval(_judge(backend, server), tmp_path / "again", *BATCH)  # from the cache: nothing submitted
    assert again.exit_code == 0 and len(server.submitted) == 2 * CASES


def _recorded(run: Path) -> int:
    files = state_files(run) if (run / "batches").exists() else []
    if not files:
        return 0
    try:
        entries = json.loads(files[0].read_text())["entries"]
    except ValueError:
        return 0
    return sum(1 for e in entries if e.get("batch_id"))


def test_kill_9_while_batches_run_then_resume_submits_nothing_twice(server: BatchServer, tmp_path: Path) -> None:
    judge = _judge("openai", server)
    reference = _eval(judge, tmp_path / "sync", "--judge-option", "cache_policy=off")
    assert reference.exit_code == 0, reference.output
    server.process_s = 3600.0  # batches stay in progress until the test lets them end
    run = tmp_path / "run"
    cmd = [TAILOR, "eval", "--data", "demo", "--limit", str(CASES), "--n-boot", "20", "--judge", judge,
           "--out", str(run), "--no-progress", *BATCH, "--judge-option", "batch_max_requests=5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ)
    while proc.poll() is None and _recorded(run) < 5:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1]
    proc.kill()
    proc.wait()
    assert not (run / "predictions.jsonl").exists() or not (run / "predictions.jsonl").read_text().strip()
    submitted = len(server.submitted)
    assert submitted == 2 * CASES  # 24 requests in 5 batches, all recorded before the kill
    server.process_s = 0.0  # the provider finishes them while nobody waits
    resumed = subprocess.run([TAILOR, "eval", "--resume", str(run), "--no-progress"], capture_output=True,
                             text=True, timeout=300, env=os.environ)
    assert resumed.returncode == 0, resumed.stderr
    assert server.duplicates() == {} and len(server.submitted) == submitted  # re-attached, nothing resent
    assert _choices(run) == _choices(tmp_path / "sync")  # 0 lost verdicts, the same ones
    described = json.loads((run / "manifest.json").read_text())["config"]["judge_description"]["model"]["batch"]
    assert described["batches"]["attached"] == 5 and described["requests"]["submitted"] == 0


def test_wrong_key_and_no_batch_api_are_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with BatchServer(tmp_path / "nobatch", batches=False) as server:
        result = _eval(_judge("openai", server), tmp_path / "a", *BATCH)
        assert result.exit_code == 2 and "has no batch API" in result.output, result.output
    with BatchServer(tmp_path / "keyed") as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
        result = _eval(_judge("anthropic", server), tmp_path / "b", *BATCH)
        assert result.exit_code == 2 and "refused the credentials" in result.output, result.output
        assert "wrong" not in result.output
        assert server.submitted == []


def test_an_unreadable_result_line_is_a_failed_verdict_and_exit_3(tmp_path: Path) -> None:
    with BatchServer(tmp_path / "server", corrupt_batches=(1,)) as server:
        result = _eval(_judge("openai", server), tmp_path / "run", *BATCH, "--max-failed", "0")
    assert result.exit_code == 3, result.output
    assert "bad_response" in result.output and " line " in result.output
    rows = [json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(rows) == 2 * CASES and len(failed) == 1  # every other verdict kept


# -- the command line's batch verbs and flags ------------------------------------------------------------

FAST = ["--judge-option", "batch_poll_s=0.02", "--judge-option", "batch_wait_s=0.05"]


def _tailor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TAILOR, *args], capture_output=True, text=True, timeout=300, env=os.environ)


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([TAILOR, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=os.environ)


def _wait_recorded(proc: subprocess.Popen[str], run: Path, batches: int) -> None:
    """Until the run's state file names `batches` provider batch ids (the process still running)."""
    while proc.poll() is None and _recorded(run) < batches:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1]


def _waiting(judge: str, server: BatchServer, tmp_path: Path, per_batch: int,
             batches: int) -> tuple[int, subprocess.Popen[str]]:
    """A synchronous reference run into tmp_path/sync, then a batch run into tmp_path/run whose batches stay in
    progress, once its state file names `batches` batch ids; returns the custom_ids submitted before it."""
    reference = _eval(judge, tmp_path / "sync", "--judge-option", "cache_policy=off")
    assert reference.exit_code == 0, reference.output
    before = len(server.submitted)
    server.process_s = 3600.0
    run = tmp_path / "run"
    proc = _start(["eval", "--data", "demo", "--limit", str(CASES), "--n-boot", "20", "--judge", judge, "--out",
                   str(run), "--no-progress", "--batch", *FAST, "--judge-option", f"batch_max_requests={per_batch}"])
    _wait_recorded(proc, run, batches)
    return before, proc


def _killed(judge: str, server: BatchServer, tmp_path: Path, per_batch: int, batches: int) -> int:
    """`_waiting`, then kill -9 of the batch run; returns the custom_ids submitted before it."""
    before, proc = _waiting(judge, server, tmp_path, per_batch, batches)
    proc.kill()
    proc.wait()
    return before


def _status(run: Path) -> dict[str, Any]:
    result = _tailor("batch", "status", str(run), "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_the_batch_flag_is_the_judge_option_and_the_report_shows_both_costs(server: BatchServer,
                                                                            tmp_path: Path) -> None:
    judge = _judge("openai", server)
    sync = _eval(judge, tmp_path / "sync", "--judge-option", "cache_policy=off")
    assert sync.exit_code == 0, sync.output
    batch = _eval(judge, tmp_path / "batch", "--batch", *FAST)
    assert batch.exit_code == 0, batch.output
    assert _choices(tmp_path / "batch") == _choices(tmp_path / "sync")
    assert len(server.submitted) == len(set(server.submitted)) == 2 * CASES
    manifest = json.loads((tmp_path / "batch" / "manifest.json").read_text())
    assert manifest["config"]["judge_options"]["batch"] == "true"  # what --resume builds the judge with
    usage = json.loads((tmp_path / "batch" / "results.json").read_text())["usage"]
    assert usage["batch"]["batches"] >= 1 and usage["batch"]["requests"] == 2 * CASES
    assert usage["batch"]["sync_cost_usd"] == pytest.approx(_cost(tmp_path / "sync"))  # the synchronous run's
    assert usage["batch"]["cost_usd"] == pytest.approx(_cost(tmp_path / "sync") / 2) == pytest.approx(_cost(
        tmp_path / "batch"))
    report = (tmp_path / "batch" / "report.md").read_text()
    assert (f"(batch API {usage['batch']['cost_usd']:.4f}; synchronous {usage['batch']['sync_cost_usd']:.4f})"
            in report)
    assert "batch API" in (tmp_path / "batch" / "report.html").read_text()
    assert "(batch API" not in (tmp_path / "sync" / "report.md").read_text()
    status = _status(tmp_path / "batch")
    assert status["open"] == 0 and status["by_status"] == {"ended": len(status["batches"])}
    assert status["cost_usd"] == pytest.approx(usage["batch"]["cost_usd"])


def test_batch_flag_on_a_judge_without_batch_api_is_exit_2(tmp_path: Path) -> None:
    result = _eval("longer", tmp_path / "run", "--batch")
    assert result.exit_code == 2 and "batch" in result.output, result.output
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_status_and_cancel_of_a_run_left_waiting_then_resume(server: BatchServer, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    judge, run = _judge("openai", server), tmp_path / "run"
    before = _killed(judge, server, tmp_path, 10, 3)
    status = _status(run)
    assert status["open"] == 3 and status["requests"] == 2 * CASES
    assert {b["live_status"] for b in status["batches"]} <= {"validating", "in_progress"}
    assert status["resume_command"] == f"tailor eval --resume {run}"
    text = _tailor("batch", "status", str(run))
    assert text.returncode == 0 and "3 still open" in text.stderr and "tailor eval --resume" in text.stderr

    monkeypatch.setenv("OPENAI_API_KEY", "wrong")  # a refused key: exit 2, named, the key never shown
    refused = _tailor("batch", "cancel", str(run))
    assert refused.returncode == 2 and "OPENAI_API_KEY" in refused.stderr and "wrong" not in refused.stderr
    assert "Traceback" not in refused.stderr
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    cancelled = _tailor("batch", "cancel", str(run), "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert len(json.loads(cancelled.stdout)["cancelled"]) == 3
    assert {b["live_status"] for b in _status(run)["batches"]} <= {"cancelling", "cancelled"}

    server.process_s = 0.0
    resumed = _tailor("eval", "--resume", str(run), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert _choices(run) == _choices(tmp_path / "sync")  # 0 lost verdicts, the same ones
    sent = Counter(server.submitted[before:])
    # what the cancelled batches did not answer was sent again once, in new batches; nothing a third time
    assert len(sent) == 2 * CASES and max(sent.values()) <= 2 and sum(sent.values()) > 2 * CASES
    again = _tailor("batch", "cancel", str(run))
    assert again.returncode == 0 and "no batch left to cancel" in again.stderr


def test_batch_verbs_on_a_run_without_batches_are_exit_2(tmp_path: Path) -> None:
    plain = _eval("longer", tmp_path / "plain")
    assert plain.exit_code == 0, plain.output
    for verb in ("status", "cancel"):
        result = CliRunner().invoke(app, ["batch", verb, str(tmp_path / "plain")])
        assert result.exit_code == 2 and "no provider batches are recorded" in result.output, result.output
        missing = CliRunner().invoke(app, ["batch", verb, str(tmp_path / "missing")])
        assert missing.exit_code == 2 and "no such run directory" in missing.output


def test_ctrl_c_in_batch_mode_stops_waiting_and_the_resume_sends_nothing_twice(server: BatchServer,
                                                                                tmp_path: Path) -> None:
    judge, run = _judge("anthropic", server), tmp_path / "run"
    before, proc = _waiting(judge, server, tmp_path, 6, 4)
    proc.send_signal(signal.SIGINT)  # one Ctrl-C: the batches take an hour, the process does not wait for them
    stderr = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, stderr
    assert f"tailor eval --resume {run}" in stderr and "re-attaches" in stderr
    assert json.loads((run / "manifest.json").read_text())["status"] == "interrupted"
    assert len(server.submitted) - before == 2 * CASES
    server.process_s = 0.0
    resumed = _tailor("eval", "--resume", str(run), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert len(server.submitted) - before == 2 * CASES and not server.duplicates()  # nothing submitted twice
    assert _choices(run) == _choices(tmp_path / "sync")


def _gen_eval(judge: str, model: str, out: Path, *extra: str) -> list[str]:
    return ["gen-eval", "--model", model, "--judge", judge, "--per-tier", "2", "--validate-cases", "3", "--n-boot",
            "20", "--out", str(out), "--no-progress", *extra]


def _lines(path: Path, *key: str) -> dict[tuple[Any, ...], Any]:
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    out = {tuple(r[k] for k in key): (r.get("answer"), r.get("choice"), r["status"]) for r in rows}
    assert len(out) == len(rows)  # nothing written twice
    return out


def test_gen_eval_batch_kill_9_then_resume(server: BatchServer, tmp_path: Path) -> None:
    model = f"openai:gpt-4o-mini@{server.url}/v1"
    judge = _judge("anthropic", server)
    off = ["--model-option", "cache_policy=off", "--judge-option", "cache_policy=off"]
    sync = _tailor(*_gen_eval(judge, model, tmp_path / "sync", *off))
    assert sync.returncode == 0, sync.stderr
    before = len(server.submitted)
    server.process_s = 3600.0
    run = tmp_path / "run"
    fast = [*FAST, "--model-option", "batch_poll_s=0.02", "--model-option", "batch_wait_s=0.05"]
    proc = _start(_gen_eval(judge, model, run, "--batch", *fast))
    _wait_recorded(proc, run, 1)  # the generations' batch, recorded in the run directory
    proc.kill()
    proc.wait()
    assert not (run / "verdicts.jsonl").exists()
    server.process_s = 0.0
    resumed = _tailor("gen-eval", "--resume", str(run), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert "1 attached" in resumed.stderr and not server.duplicates()  # re-attached: no request sent twice
    assert _lines(run / "generations.jsonl", "case_id", "role") == _lines(
        tmp_path / "sync" / "generations.jsonl", "case_id", "role")
    assert _lines(run / "verdicts.jsonl", "case_id", "order") == _lines(
        tmp_path / "sync" / "verdicts.jsonl", "case_id", "order")
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["batch"] is True and manifest["status"] == "finished"
    status = _status(run)  # the generating model's and the judge's batches, both in the run directory
    assert {b["model"] for b in status["batches"]} == {model, judge.removeprefix("llm:")}
    assert status["open"] == 0 and len(server.submitted) > before
    usage = json.loads((run / "results.json").read_text())["usage"]
    assert usage["batch"]["requests"] == status["requests"] and usage["batch"]["cost_usd"] == pytest.approx(
        usage["batch"]["sync_cost_usd"] / 2) == pytest.approx(status["cost_usd"])


def test_gen_eval_batch_without_any_batch_model_is_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, _gen_eval("longer", "hf:some/model", tmp_path / "run", "--batch"))
    assert result.exit_code == 2 and "no model of this run has a batch API" in result.output, result.output


def test_an_oversized_request_fails_alone_exit_3_and_the_rest_is_kept(server: BatchServer, tmp_path: Path) -> None:
    judge = _judge("openai", server)
    result = _eval(judge, tmp_path / "run", "--batch", *FAST, "--judge-option", "batch_max_bytes=2300",
                   "--max-failed", "0")
    assert result.exit_code == 3, result.output
    rows = [json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(rows) == 2 * CASES and 0 < len(failed) < len(rows)  # every verdict written, failed or not
    assert all("over the openai batch limit of 2,300 bytes" in r["error"] for r in failed)
    assert len(server.submitted) == len(rows) - len(failed)  # the oversized ones were never sent


def test_a_refused_key_on_resume_loses_nothing_written(server: BatchServer, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    judge, run = _judge("openai", server), tmp_path / "run"
    before = _killed(judge, server, tmp_path, 10, 3)
    recorded = {p: p.read_bytes() for p in state_files(run)}
    server.process_s = 0.0
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    refused = _tailor("eval", "--resume", str(run), "--no-progress")
    assert refused.returncode == 2 and "OPENAI_API_KEY" in refused.stderr and "wrong" not in refused.stderr
    assert "Traceback" not in refused.stderr
    assert {p: p.read_bytes() for p in state_files(run)} == recorded  # the batches are still recorded, untouched
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    resumed = _tailor("eval", "--resume", str(run), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert len(server.submitted) - before == 2 * CASES and not server.duplicates()
    assert _choices(run) == _choices(tmp_path / "sync")


def test_a_batch_the_server_refuses_whole_is_exit_2_naming_the_options(tmp_path: Path) -> None:
    with BatchServer(tmp_path / "server", anthropic_max_requests=5) as server:
        result = _eval(_judge("anthropic", server), tmp_path / "run", "--batch", *FAST)
        assert result.exit_code == 2, result.output
        assert "batch_max_requests" in result.output and "Traceback" not in result.output
        again = _eval(_judge("anthropic", server), tmp_path / "run2", "--batch", *FAST,
                      "--judge-option", "batch_max_requests=5")  # the fix the message names
        assert again.exit_code == 0, again.output
        assert len(server.submitted) == len(set(server.submitted)) == 2 * CASES
