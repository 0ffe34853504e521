"""The LLM judge's verdict stream (`judges.base.StreamingJudge`): how many calls it keeps in flight, what a stop
leaves behind, and the local HF backend through the same path."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from tailorbench.evaluate.runner import EvalConfig, run_eval
from tailorbench.judges.base import JudgeOptions, StreamingJudge, make_judge
from tailorbench.judges.llm import LLMJudge, dispatch_window
from tailorbench.models.backends import make_chat_model
from tailorbench.schema import JudgeInput
from tests.conftest import LlamaServer
from tests.helpers.counting_proxy import CountingProxy

CHAT = "/v1/chat/completions"


def test_the_window_follows_the_model() -> None:
    fixed = make_chat_model("openai:m@http://127.0.0.1:9/v1", {"concurrency": 5, "adaptive": "false"})
    assert dispatch_window(fixed) == 5
    adaptive = make_chat_model("openai:m@http://127.0.0.1:9/v1", {"concurrency": 3})
    assert dispatch_window(adaptive) == 3
    adaptive.limiter.on_success()  # slow start: one more slot per success, and the window with it
    assert dispatch_window(adaptive) == 4
    local = make_chat_model("hf:/nonexistent", {"batch_size": 3})  # loads nothing until the first call
    assert dispatch_window(local) == 3


def _inputs(n: int) -> list[JudgeInput]:
    return [JudgeInput(case_id=f"c{k}", setting="none", question=f"Which is better, {k}?", answer_a="yes",
                       answer_b="no") for k in range(n)]


def test_a_stop_leaves_only_the_calls_in_flight(llama_server: LlamaServer, call_cache: Path) -> None:
    """Stop after the first verdict: the calls already sent finish and are handed over; no other is sent."""
    upstream = llama_server.direct_base_url.removesuffix("/v1")

    def hold(method: str, path: str, body: bytes) -> None:
        if path == CHAT:
            time.sleep(0.1)

    with CountingProxy(upstream, intercept=hold) as proxy:
        judge = make_judge(f"llm:openai:{llama_server.model}@{proxy.url}/v1",
                           JudgeOptions(extra={"concurrency": "3", "adaptive": "false", "cache_policy": "off"}))
        assert isinstance(judge, LLMJudge) and isinstance(judge, StreamingJudge)

        async def consume() -> list[int]:
            stop = asyncio.Event()
            got = []
            async for position, verdict in judge.judge_stream(_inputs(20), stop):
                assert verdict.status == "ok"
                got.append(position)
                stop.set()
            await judge.aclose()
            return got

        got = asyncio.run(consume())
        assert len(got) == proxy.count(CHAT) <= 3  # every sent call handed over; at most the window was sent
        assert sorted(got) == list(range(len(got)))  # dispatched in order


def test_an_llm_judge_on_a_local_model_streams_through_the_runner(
    tiny_hf_model_dir: Path, call_cache: Path, tmp_path: Path
) -> None:
    config = EvalConfig(judge=f"llm:hf:{tiny_hf_model_dir}", limit=3, n_boot=20, setting="none",
                        judge_options={"batch_size": "2", "max_tokens": "2"})
    run = run_eval(config, tmp_path / "hf", progress=False)
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and len({(r["case_id"], r["order"]) for r in rows}) == 6
    assert json.loads((run / "manifest.json").read_text())["status"] == "finished"
