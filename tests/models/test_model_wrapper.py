"""The one model wrapper (models/model.py) around a thin backend: the wrapper alone caches, retries, limits
concurrency, de-duplicates identical requests in flight and counts; a backend only makes one attempt."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tailorbench.errors import CredentialsError
from tailorbench.models.backends import BACKENDS, backend_options, make_chat_model
from tailorbench.models.base import CallFailure, ChatResult, GenParams, Message
from tailorbench.models.model import CallError, Model

PARAMS = GenParams(max_tokens=4)


class ScriptedAPI:
    """A backend whose attempts fail as scripted (by the content of the last message), then answer."""

    backend = "scripted"
    supports_logprobs = False
    remote = True
    public_base_url = None

    def __init__(self, model: str, *, spec: str = "", fail_first: int = 0, delay: float = 0.0) -> None:
        self.model = model
        self.spec = spec or f"scripted:{model}"
        self.fail_first = fail_first
        self.delay = delay
        self.attempts: list[str] = []
        self.running = 0
        self.peak = 0

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        text = messages[-1]["content"]
        self.attempts.append(text)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.running -= 1
        if text == "refuse":
            raise CredentialsError("scripted: refused; the key is read from $SCRIPTED_KEY")
        if text == "bad request":
            raise CallError("client", "HTTP 400: no", retryable=False)
        if self.attempts.count(text) <= self.fail_first:
            raise CallError("server", "HTTP 503: busy sk-never-shown", retry_after=0.0)
        return ChatResult(text=f"answer to {text}", raw=f"answer to {text}", finish_reason="stop",
                          prompt_tokens=3, completion_tokens=2)

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model}


@pytest.fixture
def scripted() -> Any:
    BACKENDS.add("scripted", ScriptedAPI, replace=True)
    return ScriptedAPI


def _ask(text: str) -> list[Message]:
    return [{"role": "user", "content": text}]


def test_a_plugin_backend_gets_cache_retries_and_accounting(scripted: Any, tmp_path: Path) -> None:
    options = {"fail_first": 2, "cache_path": str(tmp_path / "c.sqlite"), "concurrency": 4,
               "adaptive": "false"}
    assert {"fail_first", "delay", "max_retries", "concurrency", "cache_path"} <= backend_options("scripted")
    model = make_chat_model("scripted:m", options)
    assert isinstance(model, Model)

    async def run() -> list[Any]:
        return await asyncio.gather(*(model.chat(_ask(f"q{i}"), PARAMS) for i in range(6)))

    results = asyncio.run(run())
    assert [r.text for r in results] == [f"answer to q{i}" for i in range(6)]
    assert all(r.attempts == 3 for r in results)
    stats = model.describe()["stats"]
    assert stats["requests"] == 18 and stats["retries"] == 12 and stats["errors"] == {"server": 12}
    assert stats["prompt_tokens"] == 18 and stats["failures"] == 0
    again = make_chat_model("scripted:m", options)

    async def rerun() -> list[Any]:
        return await asyncio.gather(*(again.chat(_ask(f"q{i}"), PARAMS) for i in range(6)))

    assert all(r.cached for r in asyncio.run(rerun()))
    assert again.api.attempts == []  # type: ignore[attr-defined]


def test_identical_requests_in_flight_are_sent_once(scripted: Any) -> None:
    model = make_chat_model("scripted:m", {"cache_policy": "off", "delay": 0.05})

    async def run() -> list[Any]:
        return await asyncio.gather(*(model.chat(_ask("same"), PARAMS) for _ in range(5)),
                                    model.chat(_ask("other"), PARAMS))

    results = asyncio.run(run())
    assert {r.text for r in results[:5]} == {"answer to same"} and results[5].text == "answer to other"
    assert model.api.attempts == ["same", "other"]  # type: ignore[attr-defined]
    assert model.describe()["stats"]["deduplicated"] == 4


def test_concurrency_is_the_wrappers(scripted: Any) -> None:
    model = make_chat_model("scripted:m", {"cache_policy": "off", "delay": 0.01, "concurrency": 3,
                                           "adaptive": "false"})

    async def run() -> None:
        await asyncio.gather(*(model.chat(_ask(f"q{i}"), PARAMS) for i in range(20)))

    asyncio.run(run())
    assert model.api.peak == 3  # type: ignore[attr-defined]


def test_failures_are_values_refusals_stop_and_secrets_are_masked(scripted: Any) -> None:
    from tailorbench.redact import register_secret

    register_secret("sk-never-shown")
    model = make_chat_model("scripted:m", {"cache_policy": "off", "max_retries": 1,
                                           "fail_first": 5})

    async def run() -> tuple[Any, Any]:
        gave_up = await model.chat(_ask("q"), PARAMS)
        bad = await model.chat(_ask("bad request"), PARAMS)
        return gave_up, bad

    gave_up, bad = asyncio.run(run())
    assert isinstance(gave_up, CallFailure) and gave_up.kind == "server" and gave_up.attempts == 2
    assert "gave up after 2 attempts" in gave_up.error and "sk-never-shown" not in gave_up.error
    assert isinstance(bad, CallFailure) and bad.kind == "client" and bad.attempts == 1
    with pytest.raises(CredentialsError, match="SCRIPTED_KEY"):
        asyncio.run(model.chat(_ask("refuse"), PARAMS))
    assert model.stats.errors == {"server": 2, "client": 1, "auth": 1} and model.stats.failures == 2
