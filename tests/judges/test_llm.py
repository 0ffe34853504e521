"""The LLM judge end to end through `tailor eval`, against the real llama.cpp server and the tiny model."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.errors import ConfigError
from tailorbench.judges.base import JudgeOptions, make_judge
from tailorbench.schema import JudgeInput
from tests.conftest import LlamaServer
from tests.helpers.fault_proxy import FaultPlan, fault_proxy

TAILOR = str(Path(sys.executable).parent / "tailor")


def _eval(args: list[str], exit_code: int = 0) -> dict[str, object]:
    out = CliRunner().invoke(app, ["eval", "--data", "demo", "--no-progress", "--json", *args])
    assert out.exit_code == exit_code, out.output
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _rows(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines() if line.strip()]


def test_eval_end_to_end_then_cache_hit(llama_server: LlamaServer, call_cache: Path, tmp_path: Path) -> None:
    judge = f"llm:openai:{llama_server.model}@{llama_server.base_url}"
    llama_server.reset()
    first = _eval(["--judge", judge, "--limit", "4", "--out", str(tmp_path / "r1")])
    assert llama_server.count() == 8  # 4 cases x 2 orders
    rows = _rows(tmp_path / "r1")
    assert {r["status"] for r in rows} == {"ok"} and {r["raw"] for r in rows} == {"A"}
    assert all(int(r["prompt_tokens"]) > 0 for r in rows)  # type: ignore[call-overload]
    usage = first["usage"]
    assert isinstance(usage, dict) and usage["prompt_tokens"] == sum(int(r["prompt_tokens"]) for r in rows)  # type: ignore[call-overload]
    llama_server.reset()
    second = _eval(["--judge", judge, "--limit", "4", "--out", str(tmp_path / "r2")])
    assert llama_server.count() == 0 and llama_server.count(None) == 0  # no preflight either: all cached
    assert all(r["cached"] for r in _rows(tmp_path / "r2"))
    assert second["metrics"] == first["metrics"]


def test_logprobs_verdict_and_chinese_template(llama_server: LlamaServer, call_cache: Path, tmp_path: Path) -> None:
    result = _eval(["--judge", f"llm:openai:{llama_server.model}@{llama_server.base_url}", "--limit", "3",
                    "--judge-option", "verdict=logprobs", "--out", str(tmp_path / "lp")])
    rows = _rows(tmp_path / "lp")
    assert {r["status"] for r in rows} == {"ok"} and {r["choice"] for r in rows} == {"A"}
    assert all(isinstance(r["scores"], dict) and "A" in r["scores"] for r in rows)
    assert result["usage"]["completion_tokens"] == len(rows)  # type: ignore[index]
    judge = make_judge(f"llm:openai:{llama_server.model}@{llama_server.base_url}", JudgeOptions())
    zh = JudgeInput(case_id="c", setting="persona", question="周末去哪里？", answer_a="去爬山", answer_b="在家",
                    context="喜欢运动", language="zh")
    text = "\n".join(m["content"] for m in judge.messages(zh))  # type: ignore[attr-defined]
    assert "用户画像" in text and "回答A" in text


def test_unparseable_and_failed_are_counted(llama_server: LlamaServer, call_cache: Path, tmp_path: Path) -> None:
    template = tmp_path / "chatty.jinja"
    template.write_text("<|user|>\n{{ question }} hello please\n", encoding="utf-8")
    result = _eval(["--judge", f"llm:openai:{llama_server.model}@{llama_server.base_url}", "--limit", "2",
                    "--judge-option", f"template={template}", "--judge-option", "max_tokens=24",
                    "--out", str(tmp_path / "inv")])
    rows = _rows(tmp_path / "inv")
    assert {r["status"] for r in rows} == {"invalid"}
    assert all(r["raw"] == "Hello from tiny llama." for r in rows)  # the raw text is kept
    assert result["metrics"]["all"]["invalid"] == 4  # type: ignore[index]

    upstream = llama_server.direct_base_url.removesuffix("/v1")
    with fault_proxy(upstream, FaultPlan(share=1.0, kinds=("500",))) as proxy:
        result = _eval(["--judge", f"llm:openai:{llama_server.model}@{proxy.url}/v1", "--limit", "2",
                        "--setting", "none", "--judge-option", "max_retries=1",
                        "--out", str(tmp_path / "fail")], exit_code=3)  # every verdict failed: exit 3
    rows = _rows(tmp_path / "fail")
    assert {r["status"] for r in rows} == {"failed"}
    assert all("HTTP 500" in str(r["error"]) for r in rows)
    assert result["metrics"]["all"]["failed"] == 4  # type: ignore[index]


def test_bad_options_fail_before_any_call(llama_server: LlamaServer, call_cache: Path) -> None:
    spec = f"llm:openai:{llama_server.model}@{llama_server.base_url}"
    with pytest.raises(ConfigError, match="unknown llm judge option"):
        make_judge(spec, JudgeOptions(extra={"temprature": "0"}))
    with pytest.raises(ConfigError, match="cannot read the judge template"):
        make_judge(spec, JudgeOptions(extra={"template": "/nonexistent.jinja"}))
    out = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "llm:openai:ghost@" + llama_server.base_url,
                                   "--out", "/tmp/never-written", "--no-progress"])
    assert out.exit_code == 2 and "not served" in out.output


def _cache_rows(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # the table is not created yet


def test_resume_after_kill_repeats_no_finished_call(
    llama_server: LlamaServer, call_cache: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    concurrency = 2
    cmd = [TAILOR, "eval", "--data", "demo", "--limit", "12", "--judge",
           f"llm:openai:{llama_server.model}@{llama_server.base_url}", "--judge-option", f"concurrency={concurrency}",
           "--judge-option", "adaptive=false", "--batch-size", "4", "--out", str(run), "--no-progress"]
    llama_server.reset()
    proc = subprocess.Popen(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while proc.poll() is None and _cache_rows(call_cache) < 6:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    sent_before = llama_server.count()
    cached = _cache_rows(call_cache)
    written = len(_rows(run)) if (run / "predictions.jsonl").exists() else 0
    assert written <= cached < 24  # some answers were cached but not yet written as predictions
    resumed = subprocess.run([TAILOR, "eval", "--resume", str(run), "--no-progress"], env=dict(os.environ),
                             capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    rows = _rows(run)
    assert len(rows) == 24 and len({(r["case_id"], r["order"]) for r in rows}) == 24
    total = llama_server.count()
    # every call whose answer reached the client was cached and not sent again; only the ones in flight at
    # the kill (at most the concurrency) may have been sent twice
    assert total - 24 <= concurrency, (sent_before, cached, total)
    assert sum(1 for r in rows if r["cached"]) == cached - written  # the cached answers were reused
    assert json.loads((run / "manifest.json").read_text())["status"] == "finished"
