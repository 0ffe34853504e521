"""`tailor eval` in batch mode (`--judge-option batch=true`) against the conformance test server: the same
verdicts as the synchronous run at half its cost, a kill -9 while batches run and a resume that submits no
request twice and loses no verdict, and the exit codes of a wrong key, a server without batch support and an
unreadable result line (docs/cli.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
