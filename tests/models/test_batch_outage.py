"""Batch mode when the provider goes away, or refuses some lines, then `tailor eval --resume` (issue 42, point 4),
against the conformance batch server (tests/helpers/batch_server.py) on loopback, stopped and started again on
the same port and state directory as a provider restarting would be."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.models import batch_engine, waiting
from tailorbench.models.batch_state import state_files
from tests.conftest import assert_loopback, free_port
from tests.helpers.batch_server import BatchServer

ROOT = Path(__file__).resolve().parents[2]
CASES = 12
CALLS = 2 * CASES
BATCH = ["--judge-option", "batch=true", "--judge-option", "batch_poll_s=0.02", "--judge-option",
         "batch_wait_s=0.05"]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def _eval(url: str, run: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["eval", "--data", "demo", "--limit", str(CASES), "--n-boot", "20", "--judge",
                                    f"llm:openai:gpt-4o-mini@{url}/v1", "--out", str(run), "--no-progress", *BATCH,
                                    *extra])


def _rows(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines() if line.strip()]


def _last(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["case_id"], r["order"]): r for r in _rows(run)}


def _recorded(run: Path) -> int:
    files = state_files(run) if (run / "batches").exists() else []
    try:
        entries = json.loads(files[0].read_text())["entries"] if files else []
    except ValueError:
        return 0
    return sum(1 for e in entries if e.get("batch_id"))


def _described(run: Path) -> dict[str, Any]:
    batch: dict[str, Any] = json.loads((run / "manifest.json").read_text())["config"]["judge_description"]["model"][
        "batch"]
    return batch


def _provider(state: Path, port: int, process_s: float) -> tuple[subprocess.Popen[str], str]:
    """The batch server in a process of its own (a kill is a real outage: every connection drops)."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.helpers.batch_server", "--state", str(state), "--port",
                             str(port), "--process-s", str(process_s)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert_loopback(proc, "batch server")
    return proc, url


def _submitted(state: Path) -> list[str]:
    return list(json.loads((state / "state.json").read_text())["submitted"])


def test_a_provider_down_mid_batch_then_resume_reattaches_and_submits_nothing_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong before (97f6c24): a batch provider that went down mid-batch made the run wait minutes without a line,
    then exit 3 with every call failed ("it stays recorded; --resume re-attaches"); once the provider was back,
    `tailor eval --resume` exited 3 at once without polling, because the failed lines counted as done, so the
    verdicts could only be had by a new run submitting (and paying for) every request again. Now the wait prints
    what it waits for, and the resume re-attaches to the recorded batch: every verdict, no custom_id twice."""
    monkeypatch.setattr(batch_engine, "MAX_POLL_ERRORS", 2)  # give up after two failed polls, not ten
    monkeypatch.setattr(waiting, "EVERY_S", 0.2)  # the waiting line every 0.2 s instead of 30 s
    port, state, run = free_port(), tmp_path / "server", tmp_path / "run"
    provider, url = _provider(state, port, 3600.0)  # the batch runs until the outage

    def outage() -> None:
        while _recorded(run) < 1:
            time.sleep(0.02)
        provider.kill()  # mid-batch: submitted, recorded, not ended
        provider.wait()

    watcher = threading.Thread(target=outage, daemon=True)
    watcher.start()
    try:
        first = _eval(url, run)
    finally:
        provider.kill()
        watcher.join()
    assert first.exit_code == 3, first.output
    assert "the provider has not answered for" in first.stderr and "waiting for 24 calls in batch_" in first.stderr
    rows = _rows(run)
    assert len(rows) == CALLS and all(r["status"] == "failed" and "could not be polled" in r["error"] for r in rows)
    assert len(_submitted(state)) == CALLS
    provider, _ = _provider(state, port, 0.0)  # the provider is back; the batch has ended
    try:
        resumed = CliRunner().invoke(app, ["eval", "--resume", str(run), "--no-progress"])
    finally:
        provider.kill()
        provider.wait()
    assert resumed.exit_code == 0, resumed.output
    sent = _submitted(state)
    assert len(sent) == len(set(sent)) == CALLS  # re-attached: nothing submitted twice
    last = _last(run)
    assert len(last) == CALLS and all(r["status"] == "ok" for r in last.values())  # every verdict
    described = _described(run)
    assert described["batches"]["attached"] == 1 and described["requests"]["submitted"] == 0


def test_lines_a_batch_refused_are_resubmitted_on_resume_alone(tmp_path: Path) -> None:
    """Wrong before (97f6c24): the calls a finished batch answered with an error that is not retried (a 400) were
    failed verdicts that `--resume` never sent again (counted as done). Now the resume sends exactly those calls,
    in a new batch holding only their custom_ids, and the answered ones are not submitted again."""
    with BatchServer(tmp_path / "server", refuse_share=0.3) as server:
        run = tmp_path / "run"
        first = _eval(server.url, run)
        assert first.exit_code == 3, first.output
        refused = {r["custom_id"] for b in server.batch_objects() for r in b["results"] if r["outcome"] == "refused"}
        failed = [r for r in _rows(run) if r["status"] == "failed"]
        assert 0 < len(refused) == len(failed) < CALLS and len(server.submitted) == CALLS
        server.refuse_share = 0.0  # the provider accepts them now
        batches = len(server.batch_objects())
        resumed = CliRunner().invoke(app, ["eval", "--resume", str(run), "--no-progress"])
        assert resumed.exit_code == 0, resumed.output
        new = server.batch_objects()[batches:]
        assert {r["custom_id"] for b in new for r in b["requests"]} == refused
        assert server.duplicates() == {cid: 2 for cid in refused}
    last = _last(run)
    assert len(last) == CALLS and all(r["status"] == "ok" for r in last.values())
