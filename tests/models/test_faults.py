"""Fault injection: 20% of chat requests get 429 (Retry-After), 500, a hang past the timeout, or a dropped
connection; the run completes, every fault is retried and counted, and the results equal a fault-free run."""

from __future__ import annotations

import json
from pathlib import Path

from tailorbench import api
from tailorbench.evaluate.runner import EvalConfig
from tests.conftest import LlamaServer
from tests.helpers.fault_proxy import FaultPlan, fault_proxy


def _predictions(run: Path) -> dict[tuple[str, str], tuple[str | None, str]]:
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    return {(r["case_id"], r["order"]): (r["choice"], r["status"]) for r in rows}


def test_twenty_percent_faults_change_nothing(llama_server: LlamaServer, call_cache: Path, tmp_path: Path) -> None:
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    plan = FaultPlan(share=0.2, seed=7, retry_after="1", hang_s=2.5)
    options = {"cache_policy": "off", "timeout": "1.5", "backoff_base": "0.05", "max_retries": "8",
               "concurrency": "4"}
    base = EvalConfig(data="demo", limit=8, setting="none", judge_options=options)
    clean = api.eval("demo", f"llm:openai:{llama_server.model}@{llama_server.base_url}", "none",
                     out=tmp_path / "clean", config=base).run_dir
    with fault_proxy(upstream, plan) as proxy:
        faulty = api.eval("demo", f"llm:openai:{llama_server.model}@{proxy.url}/v1", "none",
                          out=tmp_path / "faulty", config=base).run_dir
        seen = proxy.count("/v1/chat/completions")
        forwarded = proxy.count("/v1/chat/completions", forwarded_only=True)
    assert sum(plan.injected.values()) > 0
    assert _predictions(faulty) == _predictions(clean)
    assert all(status == "ok" for _, status in _predictions(faulty).values())
    manifest = json.loads((faulty / "manifest.json").read_text())
    stats = manifest["config"]["judge_description"]["model"]["stats"]
    # every injected fault was seen by the client, counted and retried; only clean requests reached the server
    assert stats["retries"] == sum(plan.injected.values()) == seen - 16
    assert stats["failures"] == 0 and sum(stats["errors"].values()) == stats["retries"]
    assert forwarded == 16
    assert set(stats["errors"]) <= {"rate_limit", "server", "timeout", "connection"}
