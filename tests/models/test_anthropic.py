"""`anthropic:MODEL[@URL]`: requests exactly as the `anthropic` SDK sends them, retries on its retryable
statuses, a refused or missing key named, cost from the price table; against the conformance test server
(tests/helpers/batch_server.py) over loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from tailorbench.errors import ConfigError, CredentialsError
from tailorbench.models.anthropic_backend import AnthropicAPI
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import CallFailure, ChatResult, GenParams
from tailorbench.models.model import Model
from tailorbench.models.pricing import PriceTable
from tests.helpers.batch_server import BatchServer, answer_text
from tests.helpers.fault_proxy import FaultPlan, fault_proxy

KEY = "sk-ant-conformance-0123456789"
#: headers the SDK varies per request or that belong to the connection
ALLOWED = frozenset({"content-length", "accept-encoding", "connection", "x-stainless-retry-count",
                     "x-stainless-read-timeout"})
PARAMS = GenParams(temperature=0.0, max_tokens=16, stop=("\n\n",))
MESSAGES = [{"role": "system", "content": "You judge answers."}, {"role": "user", "content": "question ✓ 问题"}]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BatchServer]:
    with BatchServer(tmp_path / "state", key=KEY, record=True) as srv:
        yield srv


def _headers(raw: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted((k.lower(), v) for k, v in raw if k.lower() not in ALLOWED)


def test_requests_equal_the_sdk(server: BatchServer) -> None:
    async def run() -> None:
        model = make_chat_model(f"anthropic:claude-haiku-4-5@{server.url}",
                                {"cache_policy": "off", "headers": '{"X-Title": "tb"}'})
        assert isinstance(model, Model) and isinstance(model.api, AnthropicAPI)
        result = await model.chat(MESSAGES, PARAMS)
        assert isinstance(result, ChatResult) and result.text == answer_text(MESSAGES)
        await model.aclose()
        sdk = anthropic.AsyncAnthropic(api_key=KEY, base_url=server.url, max_retries=0, timeout=120.0,
                                       default_headers={"X-Title": "tb"})
        await sdk.messages.create(**model.api.request_body(MESSAGES, PARAMS))
        await sdk.close()

    asyncio.run(run())
    ours, reference = server.recorded
    assert ours[:2] == reference[:2] == ("POST", "/v1/messages")
    assert json.loads(ours[3]) == json.loads(reference[3])
    assert _headers(ours[2]) == _headers(reference[2])
    body = json.loads(ours[3])
    assert body["system"] == "You judge answers." and body["messages"] == [MESSAGES[1]]
    assert body["max_tokens"] == 16 and body["stop_sequences"] == ["\n\n"]


def test_server_errors_are_retried_and_counted(server: BatchServer) -> None:
    plan = FaultPlan(share=0.5, kinds=("500",), path="/v1/messages", seed=3)
    with fault_proxy(server.url, plan) as proxy:
        async def run() -> list[ChatResult | CallFailure]:
            model = make_chat_model(f"anthropic:claude-haiku-4-5@{proxy.url}",
                                    {"cache_policy": "off", "max_retries": 8})
            outcomes = [await model.chat([{"role": "user", "content": f"q{i}"}], PARAMS) for i in range(8)]
            assert model.stats.retries == plan.injected["500"] > 0
            assert model.stats.errors == {"server": plan.injected["500"]}
            await model.aclose()
            return outcomes

        outcomes = asyncio.run(run())
    assert all(isinstance(o, ChatResult) for o in outcomes)


def test_a_client_error_is_not_retried(server: BatchServer) -> None:
    plan = FaultPlan(share=1.0, kinds=("400",), path="/v1/messages")
    with fault_proxy(server.url, plan) as proxy:
        async def run() -> CallFailure | ChatResult:
            model = make_chat_model(f"anthropic:claude-haiku-4-5@{proxy.url}", {"cache_policy": "off"})
            outcome = await model.chat(MESSAGES, PARAMS)
            await model.aclose()
            return outcome

        outcome = asyncio.run(run())
    assert isinstance(outcome, CallFailure) and outcome.kind == "client" and outcome.attempts == 1
    assert plan.injected["400"] == 1


def test_a_refused_key_stops_at_the_first_401_and_names_the_variable(server: BatchServer,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_KEY", "wrong")

    async def run() -> None:
        model = make_chat_model(f"anthropic:claude-haiku-4-5@{server.url}",
                                {"cache_policy": "off", "api_key_env": "CLAUDE_KEY"})
        with pytest.raises(CredentialsError, match=r"\$CLAUDE_KEY \(set"):
            await model.preflight()
        with pytest.raises(CredentialsError):
            await model.chat(MESSAGES, PARAMS)
        await model.aclose()

    asyncio.run(run())
    assert [r[1] for r in server.recorded] == ["/v1/models?limit=1"]  # the chat call was never sent


def test_a_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    async def run() -> None:
        model = make_chat_model("anthropic:claude-haiku-4-5", {"cache_policy": "off"})
        with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
            await model.preflight()
        await model.aclose()

    asyncio.run(run())


def test_cost_comes_from_the_price_table_and_logprobs_are_refused(server: BatchServer) -> None:
    async def run() -> ChatResult | CallFailure:
        model = make_chat_model(f"anthropic:claude-haiku-4-5-20251001@{server.url}", {"cache_policy": "off"})
        assert not model.supports_logprobs
        outcome = await model.chat(MESSAGES, PARAMS)
        await model.aclose()
        return outcome

    result = asyncio.run(run())
    assert isinstance(result, ChatResult)
    price = PriceTable().lookup("claude-haiku-4-5-20251001")
    assert price == (1.0, 5.0)
    assert result.cost_usd == pytest.approx((result.prompt_tokens * 1.0 + result.completion_tokens * 5.0) / 1e6)
