"""Crashes, Ctrl-C and failing servers with the real LLM judge against the real llama.cpp server, requests counted
at the server (tests/helpers/counting_proxy.py). The call cache is off in the subprocess runs, so what a resume
does not repeat is down to the prediction lines written as each verdict landed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.evaluate.lock import run_state
from tests.conftest import LlamaServer
from tests.helpers.counting_proxy import CountingProxy, Reply
from tests.helpers.fault_proxy import FaultPlan, fault_proxy

TAILOR = str(Path(sys.executable).parent / "tailor")
CHAT = "/v1/chat/completions"
CONCURRENCY = 2
#: 12 cases x 2 orders
CALLS = 24


def _rows(run: Path) -> list[dict[str, object]]:
    path = run / "predictions.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _status(run: Path) -> str:
    return str(json.loads((run / "manifest.json").read_text())["status"])


def _slow(delay_s: float) -> Callable[[str, str, bytes], None]:
    """An intercept that holds each chat request a while before forwarding it: calls stay in flight long
    enough for a signal to land among them."""

    def hold(method: str, path: str, body: bytes) -> None:
        if path == CHAT:
            time.sleep(delay_s)

    return hold


def _command(server: LlamaServer, proxy: CountingProxy, run: Path) -> list[str]:
    return [TAILOR, "eval", "--data", "demo", "--limit", str(CALLS // 2), "--n-boot", "50",
            "--judge", f"llm:openai:{server.model}@{proxy.url}/v1", "--judge-option", f"concurrency={CONCURRENCY}",
            "--judge-option", "adaptive=false", "--judge-option", "cache_policy=off", "--out", str(run),
            "--no-progress"]


def _start_and_wait(cmd: list[str], run: Path, lines: int) -> subprocess.Popen[str]:
    """Start the run; return once `lines` predictions are on disk (the run must still be going)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while proc.poll() is None and len(_rows(run)) < lines:
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.fail(f"the run ended (rc {proc.returncode}) before it could be stopped: {proc.communicate()[1]}")
    return proc


def test_a_server_that_rejects_every_call_is_exit_3(llama_server: LlamaServer, tmp_path: Path) -> None:
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    run = tmp_path / "fail"
    with fault_proxy(upstream, FaultPlan(share=1.0, kinds=("500",))) as proxy:
        result = CliRunner().invoke(app, [
            "eval", "--data", "demo", "--limit", "4", "--judge", f"llm:openai:{llama_server.model}@{proxy.url}/v1",
            "--judge-option", "max_retries=1", "--judge-option", "backoff_base=0.01", "--n-boot", "50",
            "--no-progress", "--out", str(run)])
    assert result.exit_code == 3, result.output
    assert "all 8 verdicts failed" in result.stderr and "HTTP 500" in result.stderr and "(x8)" in result.stderr
    failures = json.loads((run / "results.json").read_text())["failures"]
    assert failures["by_kind"] == {"server": 8} and failures["exceeded"]
    assert failures["retries"] == 8 and failures["requests"] == 16 and failures["call_errors"] == {"server": 16}
    assert "retries 8" in result.stderr  # the summary line
    report = (run / "report.md").read_text()
    assert "## Failed calls" in report and "server 16" in report


def test_ctrl_c_finishes_the_calls_in_flight_and_a_resume_sends_only_the_missing_ones(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    run = tmp_path / "run"
    with CountingProxy(upstream, intercept=_slow(0.25)) as proxy:
        proc = _start_and_wait(_command(llama_server, proxy, run), run, 3)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 130, stderr
        assert "interrupt: no new calls" in stderr and f"tailor eval --resume {run}" in stderr
        rows = _rows(run)
        # every call that reached the server finished and has its line: none lost, none to repeat
        assert len(rows) == proxy.count(CHAT) < CALLS
        assert _status(run) == "interrupted" and run_state(run, "interrupted") == "interrupted"
        proxy.reset()
        resumed = subprocess.run([TAILOR, "eval", "--resume", str(run), "--no-progress"], capture_output=True,
                                 text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        assert f"{len(rows)} verdicts on disk, {CALLS - len(rows)} to judge" in resumed.stderr
        assert proxy.count(CHAT) == CALLS - len(rows)  # only the missing calls
    rows = _rows(run)
    assert len(rows) == CALLS and len({(r["case_id"], r["order"]) for r in rows}) == CALLS
    assert _status(run) == "finished"


def test_kill_9_then_resume_repeats_at_most_the_calls_in_flight(llama_server: LlamaServer, tmp_path: Path) -> None:
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    run = tmp_path / "run"
    with CountingProxy(upstream, intercept=_slow(0.25)) as proxy:
        proc = _start_and_wait(_command(llama_server, proxy, run), run, 3)
        proc.kill()
        proc.wait()
        written, sent = len(_rows(run)), proxy.count(CHAT)
        assert 0 <= sent - written <= CONCURRENCY  # lost: only what was in flight
        assert _status(run) == "running" and run_state(run, "running") == "interrupted"
        board = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "board")])
        assert board.exit_code == 0, board.output
        assert "| interrupted |" in (tmp_path / "board" / "report.md").read_text(encoding="utf-8")
        resumed = subprocess.run([TAILOR, "eval", "--resume", str(run), "--no-progress"], capture_output=True,
                                 text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        assert "was interrupted (its process ended without finishing" in resumed.stderr
        assert proxy.count(CHAT) - CALLS <= CONCURRENCY  # repeated: at most the calls in flight at the kill
    rows = _rows(run)
    assert len(rows) == CALLS and len({(r["case_id"], r["order"]) for r in rows}) == CALLS
    assert _status(run) == "finished"


def test_rejected_credentials_mid_run_stop_it_and_keep_the_finished_verdicts(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    """The fourth chat request gets a 401: the run stops (exit 2), the three verdicts before it stay on disk,
    the manifest says stopped with the error, and nothing else is sent."""
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    seen = [0]

    def refuse_after_three(method: str, path: str, body: bytes) -> Reply | None:
        if path != CHAT:
            return None
        seen[0] += 1
        if seen[0] <= 3:
            return None
        return Reply(401, b'{"error": {"message": "invalid api key", "type": "invalid_request_error"}}',
                     {"Content-Type": "application/json"})

    run = tmp_path / "run"
    with CountingProxy(upstream, intercept=refuse_after_three) as proxy:
        result = CliRunner().invoke(app, [
            "eval", "--data", "demo", "--limit", "6", "--judge", f"llm:openai:{llama_server.model}@{proxy.url}/v1",
            "--judge-option", "concurrency=1", "--judge-option", "adaptive=false", "--n-boot", "50",
            "--no-progress", "--out", str(run)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: ") and "refused the credentials" in result.stderr
        assert proxy.count(CHAT) == 4
    assert len(_rows(run)) == 3
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "stopped" and "CredentialsError" in manifest["error"]
