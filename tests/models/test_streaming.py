"""`Model.stream` against real servers: the llama.cpp server (through the counting proxy, which relays streamed
bodies as they arrive, and cuts them where a test says) and the streaming stub the arena's load test uses.

What is checked: the pieces of a greedy stream join into the text of the same request made without streaming;
a finished stream is cached under `chat`'s key both ways, and a cached answer replays as one piece; a stream cut
after some text ends with a counted failure and caches nothing, while one cut before any text is retried; a
refused key is a failure of kind `auth`, not an exception; a backend without streaming gives its whole answer
as one piece; usage and cost come from the stream's last chunk (the stub sends it; llama.cpp's Python server
does not, and then the tokens are 0 and the cost unknown, never 0).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from perf.streaming_stub import StubConfig, running_stub

from tailorbench.models import StreamDone, TextDelta
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import CallFailure, ChatResult, GenParams, Message
from tailorbench.models.model import Model
from tests.conftest import LlamaServer
from tests.helpers.counting_proxy import CountingProxy, Cut, Reply

CHAT: list[Message] = [{"role": "user", "content": "hello there, please recommend a book"}]
GREEDY = GenParams(temperature=0.0, seed=7, max_tokens=24)
CHAT_PATH = "/v1/chat/completions"
TRANSPORTS = ("lean", "httpx")


def _model(base_url: str, model: str, **options: Any) -> Model:
    built = make_chat_model(f"openai:{model}@{base_url}", {"backoff_base": "0", **options})
    assert isinstance(built, Model)
    return built


async def _stream(model: Model, messages: list[Message] = CHAT,
                  params: GenParams = GREEDY) -> tuple[list[str], StreamDone]:
    """The pieces' texts and the end of one stream (checking that it is the one last event)."""
    events = [event async for event in model.stream(messages, params)]
    assert all(isinstance(e, TextDelta) for e in events[:-1]) and isinstance(events[-1], StreamDone), events
    return [e.text for e in events[:-1] if isinstance(e, TextDelta)], events[-1]


def _run(model: Model, *calls: Any) -> list[Any]:
    """Run coroutine factories in order on one loop, then close the model."""

    async def run() -> list[Any]:
        try:
            return [await call() for call in calls]
        finally:
            await model.aclose()

    return asyncio.run(run())


class _Once:
    """An intercept that applies `action` to the first chat request only and forwards the rest."""

    def __init__(self, action: Reply | Cut, every: bool = False) -> None:
        self.action = action
        self.every = every
        self.applied = 0

    def __call__(self, method: str, path: str, body: bytes) -> Reply | Cut | None:
        if path != CHAT_PATH or (self.applied and not self.every):
            return None
        self.applied += 1
        return self.action


@pytest.fixture
def proxy_of(llama_server: LlamaServer) -> Iterator[Any]:
    started: list[CountingProxy] = []

    def make(intercept: Any) -> CountingProxy:
        proxy = CountingProxy(llama_server.direct_base_url.removesuffix("/v1"), intercept=intercept).start()
        started.append(proxy)
        return proxy

    yield make
    for proxy in started:
        proxy.stop()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_pieces_join_into_the_greedy_text(llama_server: LlamaServer, call_cache: Path, transport: str) -> None:
    plain = _model(llama_server.base_url, llama_server.model, cache_policy="off", transport=transport)
    streaming = _model(llama_server.base_url, llama_server.model, transport=transport)
    [whole] = _run(plain, lambda: plain.chat(CHAT, GREEDY))
    # twice: the first stream goes through the SDK, the second over the lean transport's raw path
    first, second = _run(streaming, lambda: _stream(streaming),
                         lambda: _stream(streaming, [{"role": "user", "content": "and a film?"}]))
    assert isinstance(whole, ChatResult) and whole.text
    pieces, done = first
    assert len(pieces) > 1 and "".join(pieces) == whole.text
    assert isinstance(done.result, ChatResult) and not done.cached
    assert done.result.text == whole.text and done.result.finish_reason == whole.finish_reason
    # llama.cpp's Python server sends no usage chunk: tokens unknown, cost unknown (None), never 0
    assert done.result.completion_tokens == 0 and done.result.cost_usd is None
    assert isinstance(second[1].result, ChatResult) and "".join(second[0]) == second[1].result.text
    assert streaming.stats.requests == 2 and streaming.stats.failures == 0


def test_a_stream_is_cached_under_the_key_of_chat_both_ways(llama_server: LlamaServer, call_cache: Path) -> None:
    model = _model(llama_server.base_url, llama_server.model)
    other: list[Message] = [{"role": "user", "content": "what should I cook tonight?"}]
    llama_server.reset()
    streamed, chat_after, chatted, replay = _run(
        model, lambda: _stream(model), lambda: model.chat(CHAT, GREEDY),
        lambda: model.chat(other, GREEDY), lambda: _stream(model, other))
    assert llama_server.count(CHAT_PATH) == 2  # one stream, one chat: the other two calls were cache hits
    assert isinstance(chat_after, ChatResult) and chat_after.cached
    assert chat_after.text == "".join(streamed[0])
    pieces, done = replay
    assert isinstance(chatted, ChatResult) and pieces == [chatted.text]  # a cached answer replays as one piece
    assert done.cached and isinstance(done.result, ChatResult) and done.result.text == chatted.text
    assert model.stats.calls == 4 and model.stats.cache_hits == 2


def test_a_stream_cut_after_some_text_is_a_counted_failure_and_not_cached(
    llama_server: LlamaServer, call_cache: Path, proxy_of: Any
) -> None:
    proxy = proxy_of(_Once(Cut(events=4, tear=9), every=True))
    model = _model(f"{proxy.url}/v1", llama_server.model, max_retries="3")
    pieces, done = _run(model, lambda: _stream(model))[0]
    assert pieces and isinstance(done.result, CallFailure)
    assert done.result.kind == "connection" and "broke off after" in done.result.error
    assert done.result.attempts == 1 and proxy.count(CHAT_PATH) == 1  # text was shown: never retried
    assert model.stats.failures == 1 and model.stats.errors == {"connection": 1} and model.stats.retries == 0
    assert not model.is_cached(CHAT, GREEDY)


def test_a_server_error_mid_stream_is_a_server_failure(
    llama_server: LlamaServer, call_cache: Path, proxy_of: Any
) -> None:
    error = b'data: {"error": {"message": "the model crashed (injected)"}}\r\n\r\n'
    proxy = proxy_of(_Once(Cut(events=3, then=error)))
    model = _model(f"{proxy.url}/v1", llama_server.model)
    pieces, done = _run(model, lambda: _stream(model))[0]
    assert pieces and isinstance(done.result, CallFailure) and done.result.kind == "server"
    assert "the model crashed (injected)" in done.result.error
    assert model.stats.failures == 1 and not model.is_cached(CHAT, GREEDY)


@pytest.mark.parametrize("fault", [Reply(500, b'{"error": {"message": "busy"}}'), Cut(events=1),
                                   Cut(events=1, then=b"data: {not json\r\n\r\n")],
                         ids=["500", "cut-before-text", "malformed-before-text"])
def test_a_failure_before_any_text_is_retried(
    llama_server: LlamaServer, call_cache: Path, proxy_of: Any, fault: Reply | Cut
) -> None:
    proxy = proxy_of(_Once(fault))  # the first chunk of llama.cpp's stream holds only the role: no text
    model = _model(f"{proxy.url}/v1", llama_server.model)
    pieces, done = _run(model, lambda: _stream(model))[0]
    assert isinstance(done.result, ChatResult) and done.result.attempts == 2 and "".join(pieces) == done.result.text
    assert model.stats.retries == 1 and model.stats.failures == 0 and proxy.count(CHAT_PATH) == 2
    assert model.is_cached(CHAT, GREEDY)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_key_ends_the_stream_with_an_auth_failure(
    llama_server_keyed: LlamaServer, call_cache: Path, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAM_TEST_KEY", "sk-wrong-key-000000")
    model = _model(llama_server_keyed.base_url, llama_server_keyed.model, transport=transport,
                   api_key_env="STREAM_TEST_KEY")
    llama_server_keyed.reset()
    first, second = _run(model, lambda: _stream(model), lambda: _stream(model, [{"role": "user", "content": "x"}]))
    for pieces, done in (first, second):
        assert pieces == [] and isinstance(done.result, CallFailure) and done.result.kind == "auth"
        assert "$STREAM_TEST_KEY (set;" in done.result.error and "sk-wrong-key" not in done.result.error
    assert llama_server_keyed.count(CHAT_PATH) == 1  # the first refusal stops every later call
    assert model.stats.failures == 2 and model.stats.errors == {"auth": 2}


def test_a_backend_without_streaming_gives_one_piece(tiny_hf_model_dir: Path, call_cache: Path) -> None:
    model = make_chat_model(f"hf:{tiny_hf_model_dir}", {})
    assert isinstance(model, Model) and not hasattr(model.api, "stream")
    params = GenParams(max_tokens=8)
    whole, streamed, replay = _run(model, lambda: model.chat(CHAT, GenParams(max_tokens=8, seed=1)),
                                   lambda: _stream(model, params=params), lambda: _stream(model, params=params))
    assert isinstance(whole, ChatResult)
    pieces, done = streamed
    assert isinstance(done.result, ChatResult) and pieces == [done.result.text] and not done.cached
    assert replay[0] == pieces and replay[1].cached


def test_the_stub_streams_its_tokens_with_usage_and_cost(call_cache: Path) -> None:
    config = StubConfig(tokens=30, rate=2000.0, first_token_s=0.0, model="stub-a")
    with running_stub(config) as stub:
        model = _model(f"http://127.0.0.1:{stub.port}/v1", "stub-a", prices={"stub-a": [1.0, 3.0]})
        full, capped = _run(model, lambda: _stream(model, params=GenParams(max_tokens=None)),
                            lambda: _stream(model, params=GenParams(max_tokens=12)))
        assert stub.stats.streams == 2 and stub.stats.tokens_sent == 42
    pieces, done = full
    assert len(pieces) == 30 and isinstance(done.result, ChatResult) and done.result.finish_reason == "stop"
    assert done.result.completion_tokens == 30 and done.result.prompt_tokens == 6
    assert done.result.cost_usd == pytest.approx((6 * 1.0 + 30 * 3.0) / 1e6)
    assert len(capped[0]) == 12 and isinstance(capped[1].result, ChatResult)
    assert capped[1].result.finish_reason == "length"
    assert model.stats.completion_tokens == 42 and model.stats.cost_usd == pytest.approx((12 + 42 * 3.0) / 1e6)


def test_the_stub_as_a_script_prints_its_port(call_cache: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "perf" / "streaming_stub.py"
    process = subprocess.Popen([sys.executable, str(script), "--port", "0", "--print-port", "--tokens", "5",
                                "--rate", "1000", "--first-token-ms", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        model = _model(f"http://127.0.0.1:{port}/v1", "stub", cache_policy="off")
        pieces, done = _run(model, lambda: _stream(model))[0]
        assert len(pieces) == 5 and isinstance(done.result, ChatResult) and done.result.completion_tokens == 5
    finally:
        process.terminate()
        process.wait(10)


def test_the_same_request_in_flight_is_sent_once_and_a_closed_stream_frees_its_slot(call_cache: Path) -> None:
    config = StubConfig(tokens=40, rate=400.0, first_token_s=0.05, model="stub")
    with running_stub(config) as stub:
        model = _model(f"http://127.0.0.1:{stub.port}/v1", "stub", concurrency="1", adaptive="false")
        other: list[Message] = [{"role": "user", "content": "another question"}]

        async def together() -> tuple[Any, ...]:
            return tuple(await asyncio.gather(_stream(model), model.chat(CHAT, GREEDY), _stream(model)))

        async def closed_early() -> tuple[list[str], bool]:
            pieces: list[str] = []
            stream = model.stream(other, GREEDY)
            async for event in stream:
                assert isinstance(event, TextDelta)
                pieces.append(event.text)
                if len(pieces) == 3:
                    break
            await stream.aclose()
            return pieces, model.is_cached(other, GREEDY)

        shared, early, again = _run(model, together, closed_early, lambda: _stream(model, other))
        assert stub.stats.streams == 3  # the three calls of one request were one stream; then two of `other`
    (pieces, done), chatted, (waited, waited_done) = shared
    assert isinstance(done.result, ChatResult) and "".join(pieces) == done.result.text
    assert isinstance(chatted, ChatResult) and chatted.text == done.result.text
    assert waited == [done.result.text] and not waited_done.cached  # waited for the stream in flight: one piece
    assert model.deduplicated == 2
    assert len(early[0]) == 3 and early[1] is False  # closed before its end: nothing cached ...
    assert model.stats.failures == 0 and model.limiter is not None and model.limiter.inflight == 0  # ... or lost
    assert isinstance(again[1].result, ChatResult) and len(again[0]) == 24  # the slot was free for the next
