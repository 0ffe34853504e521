"""`tailor stages` verbs that call a model exit 3 when their failed calls exceed --max-failed (here: a server
that fails every call), and count calls the same way whatever shape their accounting has."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tailorbench.api.stages import call_counts
from tailorbench.cli.app import app
from tests.conftest import LlamaServer
from tests.helpers.fault_proxy import FaultPlan, fault_proxy

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "tailorbench" / "threestage" / "example"


def test_call_counts_of_every_accounting_shape() -> None:
    assert call_counts({"calls": 10, "ok": 7, "invalid": 1, "failed": 2}) == (2, 10)
    assert call_counts({"generations": {"calls": 4, "failed": 4}}) == (4, 4)
    assert call_counts({"refine_calls": {"ok": 3, "invalid": 1, "failed": 1}}) == (1, 5)
    example = {"calls": {"extract": {"calls": 3, "failed": 1}, "bm25": {"method": "bm25"},
                         "generate": {"generations": {"calls": 5, "failed": 0}}}}
    assert call_counts(example) == (1, 8)
    assert call_counts({"out": "x"}) == (0, 0)


def test_judge_relevance_against_a_failing_server_is_exit_3(llama_server: LlamaServer, tmp_path: Path) -> None:
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    with fault_proxy(upstream, FaultPlan(share=1.0, kinds=("500",))) as proxy:
        args = ["stages", "judge-relevance", "--items", str(EXAMPLE / "relevance_items.jsonl"),
                "--model", f"openai:{llama_server.model}@{proxy.url}/v1", "--model-option", "max_retries=0",
                "--out", str(tmp_path / "votes.jsonl"), "--json"]
        result = CliRunner().invoke(app, [*args, "--max-failed", "1"])
    assert result.exit_code == 3, result.output
    info = json.loads(result.stdout)  # the accounting is still printed
    assert info["failed"] == info["calls"] > 0
    assert f"error: stages judge-relevance: all {info['calls']} model calls failed" in result.stderr
