"""`tailor gen-eval` end to end against the real llama.cpp server: the tiny model is the model under test, the
reference model and the judge (it answers chat prompts with "Hello from tiny llama." and judge prompts with "A")."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.geneval import GenEvalConfig
from tests.conftest import LlamaServer

TAILOR = str(Path(sys.executable).parent / "tailor")


def _spec(server: LlamaServer) -> str:
    return f"openai:{server.model}@{server.base_url}"


def _gen_eval(args: list[str], exit_code: int = 0) -> dict[str, Any]:
    out = CliRunner().invoke(app, ["gen-eval", "--data", "demo", "--no-progress", "--json", "--n-boot", "200", *args])
    assert out.exit_code == exit_code, out.output
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_model_vs_reference_model_with_llm_judge_then_zero_calls(
    llama_server: LlamaServer, call_cache: Path, tmp_path: Path
) -> None:
    spec = _spec(llama_server)
    args = ["--model", spec, "--reference", spec, "--judge", f"llm:{spec}", "--per-tier", "1",
            "--validate-cases", "3", "--max-tokens", "24"]
    llama_server.reset()
    first = _gen_eval([*args, "--out", str(tmp_path / "r1")])
    run = tmp_path / "r1"
    generations = _rows(run / "generations.jsonl")
    verdicts = _rows(run / "verdicts.jsonl")
    # stratified: one case per split x tier
    assert Counter((g["split"], g["tier"]) for g in generations if g["role"] == "model") == {
        (s, t): 1 for s in ("specific", "general") for t in ("easy", "medium", "hard")}
    assert Counter(g["role"] for g in generations) == {"model": 6, "reference": 6}
    # the same tiny model on both sides answers every prompt alike (with a persona in the prompt it takes it
    # for a judge prompt and says "A"; that is fine: any non-empty answer is judged)
    assert len({g["answer"] for g in generations}) == 1 and {g["status"] for g in generations} == {"ok"}
    # both orders of every case; the judge always says "A", so the generated answer wins once and loses once
    assert Counter((v["case_id"], v["order"]) for v in verdicts) == {
        (g["case_id"], o): 1 for g in generations if g["role"] == "model" for o in ("AB", "BA")}
    assert {v["choice"] for v in verdicts} == {"A"}
    assert Counter(v["winner"] for v in verdicts) == {"generated": 6, "reference": 6}
    total = first["metrics"]["all"]
    assert (total["n"], total["tie"], total["win_rate"], total["judge_consistency"]) == (6, 6, 0.5, 0.0)
    assert total["lc_win_rate"] == pytest.approx(0.5)
    # calls: 6 generations (the reference model's identical requests come from the cache) + 6 verdicts (both
    # answers are the same text, so the prompts of both orders are identical: in flight together, the model
    # wrapper sends them once) + 3 validation cases x 2 orders
    assert llama_server.count() == 6 + 6 + 6
    validation = first["judge_validation"]
    assert validation["n"] == 3 and validation["consistency"] == 0.0
    assert any("position-inconsistent" in w for w in first["warnings"])
    for name in ("manifest.json", "generations.jsonl", "verdicts.jsonl", "results.json", "report.md", "report.html",
                 "judge_validation.json"):
        assert (run / name).is_file(), name
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "LC win rate" in report and "Judge validation" in report and "position-inconsistent" in report
    assert "<svg" in (run / "report.html").read_text(encoding="utf-8")

    # every number is recomputed from the run directory alone
    from tailorbench.geneval.results import compute_results

    assert compute_results(run) == json.loads((run / "results.json").read_text(encoding="utf-8")) == first

    llama_server.reset()
    second = _gen_eval([*args, "--out", str(tmp_path / "r2")])
    assert llama_server.count(None) == 0  # every call cached, not even a preflight
    assert second["metrics"] == first["metrics"]
    assert second["calls"]["generations_cached"] == 12 and second["calls"]["verdicts_cached"] == 12


def test_reference_chosen_with_judge_run_and_side_by_side_report(
    llama_server: LlamaServer, call_cache: Path, tmp_path: Path
) -> None:
    spec = _spec(llama_server)
    judge_run = tmp_path / "judge_run"
    out = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "longer", "--limit", "12", "--no-progress",
                                   "--out", str(judge_run)])
    assert out.exit_code == 0, out.output
    runs = []
    for name, setting in (("persona", "persona"), ("none", "none")):
        if setting == "persona":
            result = _gen_eval(["--model", spec, "--judge", "longer", "--judge-run", str(judge_run),
                                "--per-tier", "2", "--setting", setting, "--max-tokens", "24",
                                "--out", str(tmp_path / name)])
        else:  # the Python twin
            config = GenEvalConfig(model=spec, judge="longer", judge_run=str(judge_run), per_tier=2, setting=setting,
                                   max_tokens=24, n_boot=200)
            result = api.gen_eval(out=tmp_path / name, config=config).to_dict()
        runs.append(tmp_path / name)
        # the chosen answers are far longer than "Hello from tiny llama.": `longer` always prefers them
        assert result["metrics"]["all"]["win_rate"] == 0.0 and result["metrics"]["all"]["n"] == 12
        assert result["judge_validation"]["source"] == str(judge_run)
        assert result["judge_validation"]["accuracy"] == result["judge_validation"]["longer_accuracy"]
        refs = [g for g in _rows(tmp_path / name / "generations.jsonl") if g["role"] == "reference"]
        assert len(refs) == 12 and all(g["source"] == "chosen" for g in refs)
        assert result["metrics"]["all"]["reference_mention_share"] > 0.5  # chosen answers name persona values
    merged = CliRunner().invoke(app, ["report", *map(str, runs), "--out", str(tmp_path / "merged"), "--json"])
    assert merged.exit_code == 0, merged.output
    assert [r["setting"] for r in json.loads(merged.stdout)] == ["persona", "none"]
    text = (tmp_path / "merged" / "report.md").read_text(encoding="utf-8")
    assert "Side by side" in text and text.count("vs chosen") >= 2
    mixed = CliRunner().invoke(app, ["report", str(runs[0]), str(judge_run), "--out", str(tmp_path / "mixed")])
    assert mixed.exit_code == 0, mixed.output  # runs of two kinds share no table: one report per kind
    for kind in ("gen-eval", "pairwise"):
        assert f"wrote {tmp_path / 'mixed' / kind / 'report.md'}" in mixed.stdout
        assert (tmp_path / "mixed" / kind / "report.html").is_file()


def _cache_rows(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_killed_run_resumes_without_repeating_calls(
    llama_server: LlamaServer, call_cache: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    spec = _spec(llama_server)
    concurrency = 2
    cmd = [TAILOR, "gen-eval", "--data", "demo", "--model", spec, "--judge", f"llm:{spec}", "--per-tier", "4",
           "--validate-cases", "0", "--max-tokens", "24", "--batch-size", "2", "--n-boot", "100",
           "--model-option", f"concurrency={concurrency}", "--model-option", "adaptive=false",
           "--judge-option", f"concurrency={concurrency}", "--judge-option", "adaptive=false",
           "--out", str(run), "--no-progress"]
    llama_server.reset()
    proc = subprocess.Popen(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while proc.poll() is None and _cache_rows(call_cache) < 30:  # 24 generations, then some verdicts
        time.sleep(0.01)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.loads((run / "manifest.json").read_text())["status"] == "running"
    resumed = subprocess.run([TAILOR, "gen-eval", "--resume", str(run), "--no-progress"], env=dict(os.environ),
                             capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    generations, verdicts = _rows(run / "generations.jsonl"), _rows(run / "verdicts.jsonl")
    assert len(generations) == 48 and len({(g["case_id"], g["role"]) for g in generations}) == 48
    assert len(verdicts) == 48 and len({(v["case_id"], v["order"]) for v in verdicts}) == 48
    # only calls in flight at the kill may have been sent twice
    assert llama_server.count() - (24 + 48) <= concurrency
    results = json.loads((run / "results.json").read_text())
    assert results["status"] == "finished" and results["metrics"]["all"]["n"] == 24
    assert any("not validated" in w for w in results["warnings"])


def test_failed_generations_and_invalid_verdicts_are_counted(
    llama_server: LlamaServer, call_cache: Path, tmp_path: Path
) -> None:
    from tests.helpers.fault_proxy import FaultPlan, fault_proxy

    upstream = llama_server.direct_base_url.removesuffix("/v1")
    with fault_proxy(upstream, FaultPlan(share=1.0, kinds=("500",))) as proxy:
        failing = f"openai:{llama_server.model}@{proxy.url}/v1"
        # every generation of the model under test failed: the work failed, exit 3 (results still written)
        result = _gen_eval(["--model", failing, "--judge", "longer", "--per-tier", "1", "--validate-cases", "2",
                            "--model-option", "max_retries=1",
                            "--max-failed", "1", "--out", str(tmp_path / "fail")], exit_code=3)
    failures = result["failures"]
    assert (failures["failed"], failures["calls"], failures["failed_generations"], failures["exceeded"]) == (
        6, 6, 6, True)
    assert "HTTP 500" in failures["first_errors"][0] and any("exits with code 3" in w for w in result["warnings"])
    total = result["metrics"]["all"]
    assert (total["n_cases"], total["gen_failed"], total["n"], total["win_rate"]) == (6, 6, 0, None)
    assert any("6 generation(s) of the model under test failed" in w for w in result["warnings"])
    rows = [g for g in _rows(tmp_path / "fail" / "generations.jsonl") if g["role"] == "model"]
    assert all(g["status"] == "failed" and "HTTP 500" in g["error"] for g in rows)
    assert not (tmp_path / "fail" / "verdicts.jsonl").exists() or not _rows(tmp_path / "fail" / "verdicts.jsonl")

    # a judge whose answers cannot be parsed: every verdict invalid, every case unjudged, nothing dropped
    template = tmp_path / "chatty.jinja"
    template.write_text("<|user|>\n{{ question }} hello please\n", encoding="utf-8")
    spec = _spec(llama_server)
    result = _gen_eval(["--model", spec, "--judge", f"llm:{spec}", "--judge-option", f"template={template}",
                        "--per-tier", "1", "--validate-cases", "0", "--setting", "none", "--max-tokens", "24",
                        "--out", str(tmp_path / "invalid")])
    total = result["metrics"]["all"]
    verdicts = _rows(tmp_path / "invalid" / "verdicts.jsonl")
    invalid = sum(1 for v in verdicts if v["status"] == "invalid")
    assert invalid >= 8 and total["verdict_status"].get("invalid") == invalid  # (a few questions read as A/B)
    unjudged = {v["case_id"] for v in verdicts} - {v["case_id"] for v in verdicts if v["status"] == "ok"}
    assert total["unjudged"] == len(unjudged) > 0 and total["n"] + total["unjudged"] == 6
    assert any("no valid verdict" in w for w in result["warnings"])
    assert f"invalid {invalid}" in (tmp_path / "invalid" / "report.md").read_text(encoding="utf-8")


def test_clear_errors_before_any_call(llama_server: LlamaServer, call_cache: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["gen-eval", "--out", str(tmp_path / "x"), "--no-progress"])
    assert out.exit_code == 2 and "--model is required" in out.output
    out = runner.invoke(app, ["gen-eval", "--model", "openai:ghost@" + llama_server.base_url, "--per-tier", "1",
                              "--out", str(tmp_path / "ghost"), "--no-progress"])
    assert out.exit_code == 2 and "not served" in out.output
    out = runner.invoke(app, ["gen-eval", "--model", _spec(llama_server), "--setting", "nope",
                              "--out", str(tmp_path / "y"), "--no-progress"])
    assert out.exit_code == 2 and "unknown setting" in out.output
    out = runner.invoke(app, ["gen-eval", "--resume", str(tmp_path), "--no-progress"])
    assert out.exit_code == 2 and "manifest.json is missing" in out.output


def test_local_hf_model_as_the_model_under_test(tiny_hf_model_dir: Path, call_cache: Path, tmp_path: Path) -> None:
    """Generation goes through `models/` whatever the backend: the tiny model loaded by transformers."""
    result = _gen_eval(["--model", f"hf:{tiny_hf_model_dir}", "--judge", "longer", "--per-tier", "1",
                        "--setting", "none", "--validate-cases", "2", "--max-tokens", "16",
                        "--out", str(tmp_path / "hf")])
    rows = [g for g in _rows(tmp_path / "hf" / "generations.jsonl") if g["role"] == "model"]
    assert len(rows) == 6 and all(g["status"] == "ok" and g["source"] == f"hf:{tiny_hf_model_dir}" for g in rows)
    assert result["metrics"]["all"]["n"] == 6 and result["judge_validation"]["n"] == 2
