"""`--resume` finishes what failed (issue 42, point 4), against real servers on loopback: the conformance server's
synchronous endpoint (tests/helpers/batch_server.py) behind the fault-injecting proxy, requests counted there.

- a failed call (an error, nothing answered) is sent again by `--resume`, and only it; its new line is appended;
- an invalid verdict (an answer the judge's parser could not read) is an answer: never sent again;
- every reader takes the last line per (case, order): report, compare, view, reliability and agreement give the
  same figures for a run with a second line for a key as for the run holding only its last lines;
- Ctrl-C before the first verdict ends with the resume command; Ctrl-C once every verdict is in changes nothing
  (the run finishes, exit 0); a refused `tailor eval` leaves `run.lock` as the last real holder wrote it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.agreement.runs import read_run_dir
from tailorbench.api import compare
from tailorbench.benchmarks.choice_run import ChoiceConfig, run_choice
from tailorbench.cli.app import app
from tailorbench.evaluate.results import load_results
from tailorbench.models import waiting
from tailorbench.run_kinds import RUN_KINDS
from tests.helpers.batch_server import BatchServer, openai_completion
from tests.helpers.benchmark_fixtures import make_personamem
from tests.helpers.counting_proxy import CountingProxy, Reply
from tests.helpers.fault_proxy import FaultPlan, fault_proxy

CHAT = "/v1/chat/completions"
CASES = 12
CALLS = 2 * CASES
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BatchServer]:
    with BatchServer(tmp_path / "server") as srv:
        yield srv


def _rows(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines() if line.strip()]


def _eval(judge: str, run: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["eval", "--data", "demo", "--limit", str(CASES), "--n-boot", "20", "--judge",
                                    judge, "--judge-option", "max_retries=0", "--judge-option", "cache_policy=off",
                                    "--out", str(run), "--no-progress", *extra])


def _resume(run: Path) -> Any:
    return CliRunner().invoke(app, ["eval", "--resume", str(run), "--no-progress"])


def test_resume_after_70_percent_http_500s_sends_exactly_the_failed_calls(server: BatchServer, tmp_path: Path) -> None:
    """Wrong before (97f6c24): after a run whose calls got 70% HTTP 500s, `--resume` sent nothing and exited 3,
    because `runner.read_done` counted the failed lines as done; the only way to the verdicts was a new run paying
    for every call again. Now the resume sends the failed calls and only those, appends their lines, and ends
    with every verdict (the last line per (case, order) counts)."""
    plan = FaultPlan(share=0.7, seed=3, kinds=("500",))
    run = tmp_path / "run"
    with fault_proxy(server.url, plan) as proxy:
        first = _eval(f"llm:openai:gpt-4o-mini@{proxy.url}/v1", run)
        assert first.exit_code == 3, first.output
        rows = _rows(run)
        failed = {(r["case_id"], r["order"]) for r in rows if r["status"] == "failed"}
        assert len(rows) == CALLS and CALLS // 2 < len(failed) < CALLS, plan.injected
        plan.share = 0.0  # the provider is healthy again
        proxy.reset()
        resumed = _resume(run)
        assert resumed.exit_code == 0, resumed.output
        assert proxy.count(CHAT) == len(failed)  # exactly the failed calls, nothing answered sent again
        assert (f"{CALLS - len(failed)} verdicts on disk, {len(failed)} to judge ({len(failed)} of them failed "
                "calls, tried again)") in resumed.stderr
    after = _rows(run)
    assert after[:CALLS] == rows  # appended, nothing rewritten
    assert {(r["case_id"], r["order"]) for r in after[CALLS:]} == failed
    assert all(r["status"] == "ok" for r in after[CALLS:])
    results = json.loads((run / "results.json").read_text())
    assert results["failures"]["failed"] == 0 and results["failures"]["verdicts"] == CALLS
    assert results["metrics"]["all"]["n"] == CASES and results["status"] == "finished"


def test_a_multiple_choice_run_resumed_asks_again_only_the_failed_items(server: BatchServer, tmp_path: Path) -> None:
    """Wrong before (97f6c24): a multiple-choice run (PersonaMem) resumed skipped every item with a line, failed
    ones included, so its failed calls stayed failed. Now the resume asks again exactly the items whose last line
    failed, appends their lines, and its results count the last line per item."""
    make_personamem(tmp_path / "data")
    plan = FaultPlan(share=0.6, seed=5, kinds=("500",))
    out = tmp_path / "run"
    with fault_proxy(server.url, plan) as proxy:
        config = ChoiceConfig(data=str(tmp_path / "data"), model=f"openai:gpt-4o-mini@{proxy.url}/v1",
                              model_options={"max_retries": 0, "cache_policy": "off"}, max_tokens=8, n_boot=50)
        first = run_choice(config, out)
        failed = {r["item"] for r in _lines(out / "predictions.jsonl") if r["status"] == "failed"}
        assert 0 < len(failed) < 8 and first["overall"]["failed"] == len(failed)
        plan.share = 0.0
        proxy.reset()
        again = run_choice(config, out)
        assert proxy.count(CHAT) == len(failed)
    rows = _lines(out / "predictions.jsonl")
    assert len(rows) == 8 + len(failed) and {r["item"] for r in rows[8:]} == failed
    assert again["overall"]["n"] == 8 and again["overall"]["failed"] == 0


def test_a_gen_eval_run_resumed_asks_again_only_the_failed_generations(server: BatchServer, tmp_path: Path) -> None:
    """Wrong before (97f6c24): `tailor gen-eval --resume` skipped every generation with a line, failed ones
    included, so their cases stayed unjudged. Now the resume asks again exactly the failed generations, judges
    their cases, and the results count the last line per (case, role): every case judged."""
    from tailorbench.geneval.config import GenEvalConfig
    from tailorbench.geneval.run import resume_gen_eval, run_gen_eval

    plan = FaultPlan(share=0.5, seed=7, kinds=("500",))
    out = tmp_path / "run"
    with fault_proxy(server.url, plan) as proxy:
        config = GenEvalConfig(model=f"openai:gpt-4o-mini@{proxy.url}/v1", per_tier=2, validate_cases=0,
                               n_boot=50, max_tokens=16, model_options={"max_retries": 0, "cache_policy": "off"})
        run_gen_eval(config, out, progress=False)
        generations = _lines(out / "generations.jsonl")
        failed = {r["case_id"] for r in generations if r["status"] == "failed"}
        assert 0 < len(failed) < len(generations) // 2, plan.injected
        plan.share = 0.0
        proxy.reset()
        resume_gen_eval(out, progress=False)
        assert proxy.count(CHAT) == len(failed)
    after = _lines(out / "generations.jsonl")
    assert after[:len(generations)] == generations and {r["case_id"] for r in after[len(generations):]} == failed
    results = json.loads((out / "results.json").read_text())
    total = results["metrics"]["all"]
    assert total["gen_failed"] == 0 and total["n"] == total["n_cases"] == len(generations) // 2
    assert results["failures"]["failed"] == 0


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_calls_waiting_on_a_failing_provider_say_what_they_wait_for(server: BatchServer, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong before (97f6c24): calls retried against a provider that kept failing waited in silence (backoff up
    to 30 s between attempts; with --no-progress nothing at all until the run ended). Now, while calls wait to
    be retried, a line at least every `waiting.EVERY_S` (30 s; 0.1 s here) says how many, for how long the
    provider has failed and its last error."""
    monkeypatch.setattr(waiting, "EVERY_S", 0.1)
    with fault_proxy(server.url, FaultPlan(share=1.0, kinds=("500",))) as proxy:
        result = CliRunner().invoke(app, [
            "eval", "--data", "demo", "--limit", "1", "--n-boot", "20", "--judge",
            f"llm:openai:gpt-4o-mini@{proxy.url}/v1", "--judge-option", "max_retries=2", "--judge-option",
            "backoff_base=0.5", "--judge-option", "cache_policy=off", "--out", str(tmp_path / "run"),
            "--no-progress"])
    assert result.exit_code == 3, result.output
    assert "call(s) waiting to be retried: the provider has failed for" in result.stderr
    assert "(last: server: HTTP 500" in result.stderr


def _unreadable_half(method: str, path: str, body: bytes) -> Reply | None:
    """Half the chat calls (by a hash of the request) get an answer with no verdict in it."""
    if path != CHAT or hashlib.sha256(body).digest()[0] % 2:
        return None
    completion = openai_completion(json.loads(body))
    completion["choices"][0]["message"]["content"] = "Both answers have their merits."
    return Reply(200, json.dumps(completion).encode(), {"Content-Type": "application/json"})


def test_invalid_verdicts_are_answers_and_a_resume_sends_nothing(server: BatchServer, tmp_path: Path) -> None:
    """Not retried before (97f6c24 retried nothing at all) and still not now that failed calls are: an invalid
    verdict is the judge's answer (its parser found no choice), counted as such, and `--resume` of the run sends no
    request and writes no line."""
    run = tmp_path / "run"
    with CountingProxy(server.url.removesuffix("/"), intercept=_unreadable_half) as proxy:
        first = _eval(f"llm:openai:gpt-4o-mini@{proxy.url}/v1", run)
        assert first.exit_code == 0, first.output
        rows = _rows(run)
        invalid = sum(r["status"] == "invalid" for r in rows)
        assert 0 < invalid < CALLS and all(r["status"] in ("ok", "invalid") for r in rows)
        proxy.reset()
        resumed = _resume(run)
        assert resumed.exit_code == 0, resumed.output
        assert proxy.count(CHAT) == 0 and f"{CALLS} verdicts on disk, 0 to judge" in resumed.stderr
    assert _rows(run) == rows


def _flip(row: dict[str, Any]) -> dict[str, Any]:
    choice = {"A": "B", "B": "A"}[row["choice"]]
    return {**row, "choice": choice, "correct": not row["correct"], "raw": choice}


def test_a_second_line_for_a_case_and_order_counts_as_its_last_line_everywhere(server: BatchServer,
                                                                               tmp_path: Path) -> None:
    """Wrong before (97f6c24): a second prediction line for one (case, order) changed `report`'s accuracy (both
    lines were counted) while `compare` ignored it (it kept the first). Now every reader takes the last line per
    (case, order): a run holding a second line for two keys gives the same results (metrics, reliability,
    failures), view rows, ratings and compare figures as the run holding only those last lines."""
    dup, clean = tmp_path / "dup", tmp_path / "clean"
    first = _eval(f"llm:openai:gpt-4o-mini@{server.url}/v1", dup)
    assert first.exit_code == 0, first.output
    shutil.copytree(dup, clean)
    rows = _rows(dup)
    changed = {0: _flip(rows[0]), 5: _flip(rows[5])}
    with (dup / "predictions.jsonl").open("a") as handle:  # the second lines, appended as a retry appends them
        handle.write("".join(json.dumps(row) + "\n" for row in changed.values()))
    (clean / "predictions.jsonl").write_text("".join(json.dumps(changed.get(k, r)) + "\n" for k, r in enumerate(rows)))

    def figures(run: Path) -> dict[str, Any]:
        results = load_results(run)  # what `tailor report` shows (recomputed: the predictions changed)
        results.pop("predictions_sha256")
        return results

    got, want = figures(dup), figures(clean)
    assert got == want
    assert got["metrics"]["all"]["n"] == CASES and got["failures"]["verdicts"] == CALLS
    assert got["reliability"] == want["reliability"]
    report = CliRunner().invoke(app, ["report", str(dup), "--out", str(tmp_path / "board")])
    assert report.exit_code == 0, report.output
    accuracy = f"{100 * want['metrics']['all']['accuracy']:.1f}"
    assert accuracy in (tmp_path / "board" / "report.md").read_text(encoding="utf-8")
    view = RUN_KINDS.get("pairwise").view_rows
    assert view is not None
    assert [r.row for r in view(dup).rows] == [r.row for r in view(clean).rows]
    assert len(view(dup).rows) == CALLS
    assert [(r.item, r.rater, r.label) for r in read_run_dir(dup).ratings] == \
        [(r.item, r.rater, r.label) for r in read_run_dir(clean).ratings]
    paired = compare(clean, dup, n_boot=20)
    assert paired.n == CASES and paired.difference == 0.0 and paired.mcnemar["discordant"] == 0


#: `tailor` with a Ctrl-C (a real SIGINT to the process) raised on entry to one of the runner's functions
_INTERRUPTED = """
import signal, sys
# as in a terminal: an xdist worker ignores SIGINT and a child inherits that, so raise_signal would do nothing
signal.signal(signal.SIGINT, signal.default_int_handler)
import tailorbench.evaluate.runner as runner
name = sys.argv[1]
original = getattr(runner, name)
def interrupted(*args, **kwargs):
    signal.raise_signal(signal.SIGINT)
    return original(*args, **kwargs)
setattr(runner, name, interrupted)
from tailorbench.cli.app import main
sys.argv = ["tailor", *sys.argv[2:]]
main()
"""


def _interrupted_at(name: str, judge: str, run: Path) -> subprocess.CompletedProcess[str]:
    args = ["eval", "--data", "demo", "--limit", str(CASES), "--n-boot", "20", "--judge", judge, "--judge-option",
            "cache_policy=off", "--out", str(run), "--no-progress"]
    return subprocess.run([sys.executable, "-c", _INTERRUPTED, name, *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": "test-key"})


def test_ctrl_c_before_the_first_verdict_prints_the_resume_command(server: BatchServer, tmp_path: Path) -> None:
    """Wrong before (97f6c24): a Ctrl-C early in `tailor eval` (while the cases were read, before the runner's
    handler was installed) reached asyncio's own handler, which cancelled the run at its first await: exit 130
    without the resume command. Now the run takes it as its first Ctrl-C: the manifest says interrupted, the
    resume command is printed, and that command finishes the run."""
    run = tmp_path / "run"
    stopped = _interrupted_at("select_cases", f"llm:openai:gpt-4o-mini@{server.url}/v1", run)
    assert stopped.returncode == 130, stopped.stderr
    assert f"resume with:\n  tailor eval --resume {run}" in stopped.stderr
    assert json.loads((run / "manifest.json").read_text())["status"] == "interrupted"
    assert server.sync_calls == 0
    resumed = _resume(run)
    assert resumed.exit_code == 0, resumed.output
    assert len(_rows(run)) == CALLS and server.sync_calls == CALLS


def test_ctrl_c_once_every_verdict_is_in_finishes_the_run(server: BatchServer, tmp_path: Path) -> None:
    """Wrong before (97f6c24): a Ctrl-C just after the last verdict (the runner's handler already gone, the judge
    being closed) cancelled the run: exit 130 on a run whose verdicts were all written, its results never
    computed. Now the run holds Ctrl-C to its last file: it finishes, writes results.json and exits 0."""
    run = tmp_path / "run"
    done = _interrupted_at("_record_judge", f"llm:openai:gpt-4o-mini@{server.url}/v1", run)
    assert done.returncode == 0, done.stderr
    assert "every verdict was already in; the run is finished" in done.stderr
    assert json.loads((run / "manifest.json").read_text())["status"] == "finished"
    assert json.loads((run / "results.json").read_text())["metrics"]["all"]["n"] == CASES
    assert len(_rows(run)) == CALLS


def test_a_refused_eval_leaves_run_lock_as_it_was(tmp_path: Path) -> None:
    """Wrong before (97f6c24): `tailor eval --out RUN` on a run that holds predictions was refused (exit 2) after
    taking the lock, and had already rewritten run.lock with its own pid (the file names the last process that
    worked on the run). Now the pid is written only once the run is not refused."""
    run = tmp_path / "run"
    first = CliRunner().invoke(app, ["eval", "--data", "demo", "--limit", "3", "--n-boot", "20", "--out", str(run),
                                     "--no-progress"])
    assert first.exit_code == 0, first.output
    (run / "run.lock").write_text("4242\n")  # the last process that worked on the run
    before = (run / "run.lock").stat().st_mtime_ns
    again = CliRunner().invoke(app, ["eval", "--data", "demo", "--limit", "3", "--n-boot", "20", "--out", str(run),
                                     "--no-progress"])
    assert again.exit_code == 2 and "already holds predictions" in again.stderr
    assert (run / "run.lock").read_text() == "4242\n" and (run / "run.lock").stat().st_mtime_ns == before


def test_a_refused_gen_eval_or_multiple_choice_run_leaves_run_lock_as_it_was(server: BatchServer,
                                                                              tmp_path: Path) -> None:
    """Wrong before (97f6c24): a gen-eval refused on a directory that holds generations, and a multiple-choice
    run refused on a directory holding another run's settings, had already rewritten run.lock with their pid.
    Now both take the lock without writing it, and write their pid only once they are not refused."""
    from tailorbench.errors import ConfigError
    from tailorbench.geneval.config import GenEvalConfig
    from tailorbench.geneval.run import run_gen_eval

    model = f"openai:gpt-4o-mini@{server.url}/v1"
    gen = GenEvalConfig(model=model, per_tier=1, validate_cases=0, n_boot=20, max_tokens=16)
    run_gen_eval(gen, tmp_path / "gen", progress=False)
    make_personamem(tmp_path / "data")
    choice = ChoiceConfig(data=str(tmp_path / "data"), model=model, max_tokens=8, n_boot=20)
    run_choice(choice, tmp_path / "choice")
    for run in (tmp_path / "gen", tmp_path / "choice"):
        (run / "run.lock").write_text("4242\n")  # the last process that worked on the run
    with pytest.raises(ConfigError, match="already holds generations"):
        run_gen_eval(gen, tmp_path / "gen", progress=False)
    choice.max_tokens = 9
    with pytest.raises(ConfigError, match="other settings or data"):
        run_choice(choice, tmp_path / "choice")
    assert (tmp_path / "gen" / "run.lock").read_text() == (tmp_path / "choice" / "run.lock").read_text() == "4242\n"

