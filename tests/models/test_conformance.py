"""Requests exactly as the `openai` SDK sends them, on every transport.

The reference is the SDK with its default httpx client (`openai.AsyncOpenAI(...).chat.completions.create`). A
recording server stores each raw request; ours must equal the reference's in method, path, body (as JSON) and
headers (names compared case-insensitively, order ignored), except the headers the SDK itself varies per
request or that belong to the connection: content-length, accept-encoding, connection, x-stainless-retry-count,
x-stainless-read-timeout. The same holds over HTTPS with a private CA given through SSL_CERT_FILE, through an
HTTP proxy named by the environment, and with credentials in the base URL.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tailorbench.errors import CredentialsError
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import ChatRequest, ChatResult, GenParams
from tailorbench.models.model import Model
from tailorbench.models.openai_compat import OpenAICompatAPI
from tests.helpers.recording_server import RawRequest, RecordingServer

TRANSPORTS = ("lean", "httpx")
ALLOWED = frozenset({"content-length", "accept-encoding", "connection", "x-stainless-retry-count",
                     "x-stainless-read-timeout"})
PARAMS = GenParams(temperature=0.0, max_tokens=16, seed=3)
KEY = "sk-conformance-0123456789"


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You judge answers."}, {"role": "user", "content": f"question {i} ✓ 问题"}]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL", "HTTP_PROXY",
                 "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY", "no_proxy",
                 "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    with RecordingServer() as rec:
        yield rec


def _ours(spec: str, transport: str, n: int = 3, **options: Any) -> tuple[OpenAICompatAPI, list[Any]]:
    async def run() -> tuple[OpenAICompatAPI, list[Any]]:
        model = make_chat_model(spec, {"cache_policy": "off", "transport": transport, "concurrency": 1,
                                       "max_retries": 0, **options})
        assert isinstance(model, Model) and isinstance(model.api, OpenAICompatAPI)
        try:
            await model.preflight()
            out = [await model.chat(_messages(i), PARAMS) for i in range(n)]
        finally:
            await model.aclose()
        return model.api, out

    return asyncio.run(run())


def _reference(base_url: str, body_of: OpenAICompatAPI, n: int = 3, **client: Any) -> None:
    """The same calls through the SDK's own client and its default httpx transport."""

    async def run() -> None:
        sdk = openai.AsyncOpenAI(base_url=base_url, max_retries=0, **client)
        try:
            await sdk.models.list()
            for i in range(n):
                await sdk.chat.completions.create(**body_of.request_body(_messages(i), PARAMS))
        finally:
            await sdk.close()

    asyncio.run(run())


def _assert_same(ours: list[RawRequest], reference: list[RawRequest]) -> None:
    assert len(ours) == len(reference) > 0
    for mine, ref in zip(ours, reference, strict=True):
        assert mine.method == ref.method
        assert mine.path == ref.path
        assert mine.json() == ref.json()
        assert mine.header_set(ALLOWED) == ref.header_set(ALLOWED)


def _split(rec: RecordingServer) -> tuple[list[RawRequest], list[RawRequest]]:
    """Our requests came first, then the reference's: same count each."""
    requests = list(rec.requests)
    half = len(requests) // 2
    return requests[:half], requests[half:]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_requests_equal_the_sdk(server: RecordingServer, transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TB_CONFORMANCE_KEY", KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-conformance")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-conformance")
    headers = {"X-Title": "tailorbench conformance", "HTTP-Referer": "https://example.org/tb"}
    spec = f"openai:rec-model@{server.url}/v1"
    model, results = _ours(spec, transport, api_key_env="TB_CONFORMANCE_KEY", headers=headers)
    assert all(isinstance(r, ChatResult) and r.text == "A" for r in results)
    assert model.transport == transport
    if transport == "lean":
        assert model._chat_route is not None  # calls after the first went out on the raw path
    _reference(f"{server.url}/v1", model, api_key=KEY, default_headers=headers)
    ours, reference = _split(server)
    _assert_same(ours, reference)
    chat = [r for r in ours if r.method == "POST"]
    assert all(("authorization", f"Bearer {KEY}") in r.header_set() for r in chat)
    assert all(("openai-organization", "org-conformance") in r.header_set() for r in chat)
    assert all(("openai-project", "proj-conformance") in r.header_set() for r in chat)
    assert all(("x-title", "tailorbench conformance") in r.header_set() for r in chat)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_query_credentials_travel_as_the_sdk_sends_them(server: RecordingServer, transport: str) -> None:
    model, results = _ours(f"openai:rec-model@{server.url}/v1?api-key={KEY}&api-version=2024-06-01", transport)
    assert all(isinstance(r, ChatResult) for r in results)
    _reference(f"{server.url}/v1", model, api_key="EMPTY",
               default_query={"api-key": KEY, "api-version": "2024-06-01"})
    ours, reference = _split(server)
    _assert_same(ours, reference)
    assert all(r.path.endswith(f"?api-key={KEY}&api-version=2024-06-01") for r in ours)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_userinfo_in_the_base_url(server: RecordingServer, transport: str) -> None:
    base = f"http://tbuser:tbpass-0123@127.0.0.1:{server.port}/v1"
    model, results = _ours(f"openai:rec-model@{base}", transport)
    assert all(isinstance(r, ChatResult) for r in results)
    _reference(base, model, api_key="EMPTY")
    ours, reference = _split(server)
    _assert_same(ours, reference)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_gzip_answers_are_decoded(transport: str) -> None:
    with RecordingServer(gzip_answers=True) as rec:
        _, results = _ours(f"openai:rec-model@{rec.url}/v1", transport, n=4)
    assert [r.text for r in results] == ["A"] * 4


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    """A private CA (trustme), a server certificate for localhost, and the CA as a PEM file."""
    trustme = pytest.importorskip("trustme", reason="trustme is in the [dev] extra")
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    return context, pem


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_https_with_a_private_ca(tls: tuple[ssl.SSLContext, Path], transport: str,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    context, pem = tls
    with RecordingServer(ssl_context=context, require_key=KEY) as rec:
        # without the CA the handshake fails, and the failure is a counted connection error, not a verdict
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        failing = make_chat_model(f"openai:rec-model@{rec.url}/v1",
                                  {"cache_policy": "off", "transport": transport, "max_retries": 0})
        outcome = asyncio.run(_one_call(failing))
        assert not isinstance(outcome, ChatResult) and outcome.kind == "connection"
        monkeypatch.setenv("SSL_CERT_FILE", str(pem))
        rec.reset()
        model, results = _ours(f"openai:rec-model@{rec.url}/v1", transport)
        assert all(isinstance(r, ChatResult) for r in results)
        _reference(f"{rec.url}/v1", model)
        ours, reference = _split(rec)
    _assert_same(ours, reference)


async def _one_call(model: Any) -> Any:
    try:
        return await model.chat(_messages(0), PARAMS)
    finally:
        await model.aclose()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_proxy_variables_send_calls_through_the_sdk_transport(transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        target = "http://upstream.invalid:8000/v1"  # only reachable through the proxy
        model, results = _ours(f"openai:rec-model@{target}", transport)
        assert all(isinstance(r, ChatResult) for r in results)
        assert model.transport == "httpx" and model.requested_transport == transport
        _reference(target, model, api_key="EMPTY")
        ours, reference = _split(proxy)
    assert all(r.target.startswith("http://upstream.invalid:8000/v1/") for r in ours + reference)
    _assert_same(ours, reference)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_key_stops_at_the_first_401(transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TB_WRONG_KEY", "sk-wrong-000000")
    with RecordingServer(require_key=KEY) as rec:
        model = make_chat_model(f"openai:rec-model@{rec.url}/v1",
                                {"cache_policy": "off", "transport": transport, "concurrency": 1,
                                 "api_key_env": "TB_WRONG_KEY"})
        requests = [ChatRequest(_messages(i), PARAMS) for i in range(10)]

        async def run() -> None:
            try:
                await model.chat_many(requests)
            finally:
                await model.aclose()

        with pytest.raises(CredentialsError, match=r"\$TB_WRONG_KEY \(set;") as error:
            asyncio.run(run())
        assert "401" in str(error.value) and "sk-wrong-000000" not in str(error.value)
        assert len(rec.chat_requests()) == 1  # no call after the first refusal was sent


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer(require_key=KEY) as rec:
        model = make_chat_model(f"openai:rec-model@{rec.url}/v1", {"cache_policy": "off"})

        async def run() -> None:
            try:
                await model.preflight()
            finally:
                await model.aclose()

        with pytest.raises(CredentialsError, match=r"\$OPENAI_API_KEY \(not set;"):
            asyncio.run(run())


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("gzip_answers", [False, True], ids=["plain", "gzip"])
def test_streamed_requests_equal_the_sdk(transport: str, gzip_answers: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Model.stream` sends what `chat.completions.create(stream=True, stream_options=...)` sends: the first
    stream through the SDK, the next ones on the lean transport's raw path; gzip answers are decoded as they
    stream."""
    monkeypatch.setenv("TB_CONFORMANCE_KEY", KEY)
    options = {"cache_policy": "off", "transport": transport, "concurrency": 1, "max_retries": 0,
               "api_key_env": "TB_CONFORMANCE_KEY"}

    async def ours(url: str) -> tuple[OpenAICompatAPI, list[list[Any]]]:
        model = make_chat_model(f"openai:rec-model@{url}/v1", options)
        assert isinstance(model, Model) and isinstance(model.api, OpenAICompatAPI)
        try:
            streams = []
            for i in range(3):
                streams.append([event async for event in model.stream(_messages(i), PARAMS)])
            return model.api, streams
        finally:
            await model.aclose()

    async def reference(url: str, api: OpenAICompatAPI) -> None:
        sdk = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
        try:
            for i in range(3):
                stream = await sdk.chat.completions.create(**api.request_body(_messages(i), PARAMS), stream=True,
                                                           stream_options={"include_usage": True})
                assert [chunk async for chunk in stream]
        finally:
            await sdk.close()

    with RecordingServer(gzip_answers=gzip_answers) as rec:
        api, streams = asyncio.run(ours(rec.url))
        asyncio.run(reference(rec.url, api))
        mine, theirs = _split(rec)
    _assert_same(mine, theirs)
    assert all(r.json()["stream"] is True for r in mine)
    if transport == "lean":
        assert api._chat_route is not None  # the streams after the first went out on the raw path
    for events in streams:
        *pieces, done = events
        assert [p.text for p in pieces] == ["A"]
        assert isinstance(done.result, ChatResult) and done.result.text == "A"
        assert (done.result.prompt_tokens, done.result.completion_tokens) == (7, 1)
