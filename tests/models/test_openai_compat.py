"""The OpenAI-compatible backend against the real llama.cpp server serving the tiny model."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from tailorbench.errors import ConfigError
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import CallFailure, ChatRequest, ChatResult, GenParams
from tests.conftest import LlamaServer, free_port
from tests.helpers.fault_proxy import FaultPlan, fault_proxy

CHAT = [{"role": "user", "content": "hello there, please recommend a book"}]


def _model(server: LlamaServer, **options: Any) -> Any:
    return make_chat_model(f"openai:{server.model}@{server.base_url}", options)


def test_chat_and_usage(llama_server: LlamaServer, call_cache: Path, tiny_model_info: dict[str, object]) -> None:
    async def run() -> ChatResult | CallFailure:
        model = _model(llama_server, cache_policy="off")
        await model.preflight()
        try:
            return await model.chat(CHAT, GenParams(max_tokens=24))
        finally:
            await model.aclose()

    result = asyncio.run(run())
    assert isinstance(result, ChatResult)
    assert result.text == tiny_model_info["chat_reply"]
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert result.cost_usd is None  # a local model has no price: unknown, never 0


def test_logprobs(llama_server: LlamaServer, call_cache: Path) -> None:
    async def run() -> ChatResult | CallFailure:
        model = _model(llama_server, cache_policy="off")
        try:
            return await model.chat(CHAT, GenParams(max_tokens=4, logprobs=True, top_logprobs=5))
        finally:
            await model.aclose()

    result = asyncio.run(run())
    assert isinstance(result, ChatResult) and result.logprobs
    first = result.logprobs[0]
    assert first.logprob <= 0 and len(first.top) == 5
    assert max(first.top.values()) == pytest.approx(first.logprob)
    assert sum(math.exp(v) for v in first.top.values()) <= 1.0 + 1e-6


def test_cache_hit_sends_nothing(llama_server: LlamaServer, call_cache: Path) -> None:
    requests = [ChatRequest([{"role": "user", "content": f"question {i}"}], GenParams(max_tokens=8)) for i in range(4)]

    async def run() -> tuple[list[Any], list[Any], Any]:
        first_model = _model(llama_server)
        first = await first_model.chat_many(requests)
        await first_model.aclose()
        llama_server.reset()
        second_model = _model(llama_server)
        second = await second_model.chat_many(requests)
        await second_model.aclose()
        return first, second, second_model

    llama_server.reset()
    first, second, model = asyncio.run(run())
    assert llama_server.count() == 0
    assert [r.text for r in first] == [r.text for r in second]
    assert all(r.cached for r in second) and model.stats.cache_hits == 4 and model.stats.requests == 0


def test_preflight_fails_fast(llama_server: LlamaServer, call_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def preflight(spec: str) -> None:
        model = make_chat_model(spec, {"max_retries": 0})
        try:
            await model.preflight()
        finally:
            await model.aclose()

    with pytest.raises(ConfigError, match="not served"):
        asyncio.run(preflight(f"openai:no-such-model@{llama_server.base_url}"))
    with pytest.raises(ConfigError, match="cannot reach"):
        asyncio.run(preflight(f"openai:m@http://127.0.0.1:{free_port()}/v1"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        asyncio.run(preflight("openai:gpt-4o-mini"))
    with pytest.raises(ConfigError, match="unknown model backend"):
        make_chat_model("nosuch:qwen")


def test_client_errors_are_not_retried(llama_server: LlamaServer, call_cache: Path) -> None:
    async def run(url: str) -> ChatResult | CallFailure:
        model = make_chat_model(f"openai:{llama_server.model}@{url}/v1", {"cache_policy": "off"})
        try:
            return await model.chat(CHAT, GenParams(max_tokens=2))
        finally:
            assert model.stats.retries == 0 and model.stats.failures == 1
            await model.aclose()

    upstream = llama_server.direct_base_url.removesuffix("/v1")
    with fault_proxy(upstream, FaultPlan(share=1.0, kinds=("400",))) as proxy:
        result = asyncio.run(run(proxy.url))
        assert proxy.count("/v1/chat/completions") == 1
    assert isinstance(result, CallFailure) and result.kind == "client" and result.attempts == 1
