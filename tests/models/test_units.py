"""Unit-level pieces of the model layer: specs, <think> stripping, verdict parsing, prices, the limiter."""

from __future__ import annotations

import asyncio

import pytest

from tailorbench.errors import ConfigError
from tailorbench.judges.llm import parse_verdict
from tailorbench.models.backends import make_chat_model, parse_model_spec
from tailorbench.models.base import GenParams, strip_think
from tailorbench.models.limiter import Limiter
from tailorbench.models.openai_compat import parse_retry_after
from tailorbench.models.pricing import PriceTable
from tailorbench.prompts import split_messages


def test_model_specs() -> None:
    assert parse_model_spec("openai:gpt-4o-mini").base_url is None
    spec = parse_model_spec("openai:qwen@http://127.0.0.1:8000/v1/")
    assert (spec.backend, spec.model, spec.base_url) == ("openai", "qwen", "http://127.0.0.1:8000/v1")
    assert parse_model_spec("hf:org/name").model == "org/name"
    for bad in ("gpt-4o", "openai:", "foo:bar", "openai:m@localhost:8000", "openai:@http://x/v1"):
        with pytest.raises(ConfigError):
            parse_model_spec(bad)


def test_backend_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="do not apply"):
        make_chat_model("openai:m@http://127.0.0.1:9/v1", {"device": "cpu", "cache_policy": "off"})


def test_strip_think_keeps_reasoning() -> None:
    assert strip_think("<think>A is long\nbut B fits</think>\nB") == ("B", "A is long\nbut B fits")
    assert strip_think("<think>never closed A") == ("", "never closed A")
    assert strip_think("plain A") == ("plain A", None)


@pytest.mark.parametrize(
    ("text", "choice", "how"),
    [
        ("A", "A", "strict"),
        (" **B**.", "B", "strict"),
        ("Both are fine.\nVerdict: B", "B", "strict"),
        ("分析……\n最终答案：A", "A", "strict"),
        ("I think Answer B is more personalized for this user.", "B", "fallback"),
        ("回答A更符合用户的偏好。", "A", "fallback"),
        ("Answer A is long but Answer B is better", None, "invalid"),
        ("Hello from tiny llama.", None, "invalid"),
        ("", None, "invalid"),
    ],
)
def test_parse_verdict(text: str, choice: str | None, how: str) -> None:
    assert parse_verdict(text) == (choice, how)


def test_split_messages() -> None:
    assert split_messages("<|system|>\nbe fair\n<|user|>\nq?\n") == [
        {"role": "system", "content": "be fair"},
        {"role": "user", "content": "q?"},
    ]
    assert split_messages("just text") == [{"role": "user", "content": "just text"}]


def test_prices(tmp_path: object) -> None:
    table = PriceTable.load({"my-model": [1.0, 2.0]})
    assert table.cost("my-model", 1_000_000, 500_000) == pytest.approx(2.0)
    assert table.cost("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert table.cost("unknown-local", 10, 10) is None
    with pytest.raises(ConfigError):
        PriceTable.load({"m": "free"})


def test_retry_after() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({}) is None


def test_gen_params_key_covers_every_field() -> None:
    a = GenParams().key_dict()
    b = GenParams(reasoning_effort="high").key_dict()
    assert a != b and set(a) == set(b)


def test_limiter_aimd() -> None:
    async def run() -> Limiter:
        limiter = Limiter(4, adaptive=True, maximum=64)
        for _ in range(40):
            await limiter.acquire()
            limiter.release()
            limiter.on_success()
        grown = limiter.limit
        assert grown > 4
        limiter.on_rate_limit(None)
        assert limiter.limit == pytest.approx(grown / 2)
        return limiter

    assert asyncio.run(run()).cuts == 1


def test_limiter_fixed_never_exceeds_its_limit() -> None:
    async def run() -> int:
        limiter = Limiter(3, adaptive=False)
        peak = 0

        async def one() -> None:
            nonlocal peak
            await limiter.acquire()
            peak = max(peak, limiter.inflight)
            await asyncio.sleep(0)
            limiter.on_success()
            limiter.release()

        await asyncio.gather(*(one() for _ in range(50)))
        assert limiter.limit == 3 and limiter.inflight == 0
        return peak

    assert asyncio.run(run()) == 3
