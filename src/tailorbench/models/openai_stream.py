"""The OpenAI-compatible backend's streamed attempt (`OpenAICompatAPI.stream`, `streaming.StreamingAPI`).

The request is `generate`'s body with `"stream": true` and `"stream_options": {"include_usage": true}`, so the
last chunk before `[DONE]` carries the usage that the wrapper prices; it goes over the same transports as
`generate`: the lean transport's raw path once the SDK has sent a request to the route (its head reused byte for
byte, asking for an uncompressed body: compression holds events back), else through the SDK, whose httpx
response is read as it arrives. An HTTP error before the body raises what `generate` raises for it (the same
`CallError` kinds, Retry-After, a `CredentialsError` for 401/403). In the body, a dropped connection, a stall
past `timeout`, an `error` event, a chunk that is not JSON of the expected shape (its excerpt in the message) or
a body that ends before `[DONE]` raise `CallError`, and the wrapper decides what it means (`model_stream.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from tailorbench.models.base import CallError, ChatResult, GenParams, Message, TokenLogprob, strip_think
from tailorbench.models.keyed import short_error
from tailorbench.models.openai_wire import REDIRECTS, Headers, parse_logprobs, sdk_error, status_error
from tailorbench.models.streaming import SSEEvent, SSEParser, TextDelta, ThinkFilter
from tailorbench.redact import redact

if TYPE_CHECKING:
    from tailorbench.models.http_transport import BodyStream
#: how much of a malformed chunk an error message quotes
_EXCERPT = 200
#: after `[DONE]`, how long the raw path waits for the body's end so that its connection can be reused
_DRAIN_S = 1.0
_DRAIN_PIECES = 16


class Backend(Protocol):
    """What a streamed attempt uses of `openai_compat.OpenAICompatAPI` (which imports this module, not the other
    way): its request body, clients, transports, the route learnt from the SDK and its error classification."""

    timeout: float
    _httpx: Any
    _lean: Any
    _chat_route: tuple[tuple[str, str, int], bytes] | None

    @property
    def _refused(self) -> Exception | None: ...

    def request_body(self, messages: Sequence[Message], params: GenParams) -> dict[str, Any]: ...

    def client(self) -> Any: ...

    def call_error(self, exc: Exception) -> Exception: ...

    def _learn_route(self, response: Any) -> None: ...


async def stream_chat(api: Backend, messages: Sequence[Message],
                      params: GenParams) -> AsyncGenerator[TextDelta | ChatResult, None]:
    """One attempt: the answer's visible pieces as they arrive, then the whole `ChatResult`."""
    import openai

    if api._refused is not None:
        raise api._refused
    body = api.request_body(messages, params)
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    client = api.client()
    httpx = api._httpx
    try:
        source = await _open(api, client, body)
    except (openai.APIConnectionError, openai.APIStatusError, ValueError) as exc:
        raise api.call_error(exc) from None
    reader = ChunkReader(params.logprobs)
    parser = SSEParser()
    try:
        async for piece in source:
            for event in parser.feed(piece):
                text = reader.read(event)
                if text:
                    yield TextDelta(text)
            if reader.done:
                break
        else:
            for event in parser.close():
                reader.read(event)
            source.ended = True
    except (httpx.TimeoutException, asyncio.TimeoutError):
        raise CallError("timeout", f"the stream stalled: nothing came for {api.timeout:g}s") from None
    except (httpx.RequestError, httpx.StreamError) as exc:
        raise CallError("connection", f"the stream was cut: {type(exc).__name__}: {exc}") from None
    except ValueError as exc:  # an `SSEError`, or a body whose content coding does not decode
        raise CallError("bad_response", redact(f"unreadable stream: {short_error(exc)}")) from None
    finally:
        await source.aclose(drain=reader.done)
    tail = reader.flush()
    if tail:
        yield TextDelta(tail)
    yield reader.result(source.ended, parser.torn)


class _Source:
    """The body's bytes (content coding removed) from either path, and how to let go of them."""

    def __init__(self, pieces: AsyncGenerator[bytes, None], body: BodyStream | None = None,
                 response: Any = None) -> None:
        self._pieces = pieces
        self._body = body
        self._response = response
        #: the body ended as its framing says (not cut): with a finish reason, a missing [DONE] is forgiven
        self.ended = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces

    async def aclose(self, drain: bool) -> None:
        """Let go of the body; after `[DONE]` (`drain`) read it to its end first, which follows at once, so
        that its connection goes back to the pool (one that does not end cleanly is simply closed)."""
        if drain:
            with contextlib.suppress(Exception):
                for _ in range(_DRAIN_PIECES):
                    await asyncio.wait_for(self._pieces.__anext__(), _DRAIN_S)
        await self._pieces.aclose()
        if self._body is not None:
            self._body.close()
        if self._response is not None:
            await self._response.aclose()


async def _open(api: Backend, client: Any, body: dict[str, Any]) -> _Source:
    """Send the request; the body's pieces once the status is 200 (else the SDK's error for the status)."""
    if api._chat_route is not None:
        source = await _open_raw(api, body)
        if source is not None:
            return source
    response = await client.post("/chat/completions", cast_to=api._httpx.Response, body=body, stream=True,
                                 options={"timeout": api.timeout, "max_retries": 0})
    api._learn_route(response)
    return _Source(_bytes(response), response=response)


async def _bytes(response: Any) -> AsyncGenerator[bytes, None]:
    async for piece in response.aiter_bytes():
        yield piece


async def _open_raw(api: Backend, body: dict[str, Any]) -> _Source | None:
    """The lean transport's raw path; None after a redirect (the SDK follows it)."""
    from tailorbench.models.http_transport import ACCEPT_ENCODING, StreamDecoder, decode_body

    assert api._chat_route is not None
    origin, head = api._chat_route
    head = head.removesuffix(ACCEPT_ENCODING) + b"Accept-Encoding: identity\r\n"
    try:
        answer, stream = await api._lean.open_stream(origin, head, orjson.dumps(body), api.timeout, api.timeout)
        if answer.status in REDIRECTS:
            stream.close()
            return None
        if answer.status != 200:
            content = decode_body(answer.headers, await stream.read_all())
            raise status_error(answer.status, content, Headers(answer.headers))
    except api._httpx.TransportError as exc:
        raise sdk_error(api._httpx, exc) from exc
    decoder = StreamDecoder(answer.headers)

    async def pieces() -> AsyncGenerator[bytes, None]:
        async for piece in stream:
            yield decoder.decode(piece)

    return _Source(pieces(), body=stream)


def _malformed(data: str, why: str) -> CallError:
    excerpt = data if len(data) <= _EXCERPT else data[:_EXCERPT] + "..."
    return CallError("bad_response", redact(f"malformed stream chunk ({why}): {excerpt!r}"))


class ChunkReader:
    """OpenAI's `chat.completion.chunk` events, one at a time: the visible text each adds (`<think>` blocks held
    back), and at the end the whole answer as `parse_response` would have built it from one response."""

    def __init__(self, logprobs: bool) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._logprobs: list[TokenLogprob] | None = [] if logprobs else None
        self._think = ThinkFilter()
        self.finish_reason: str | None = None
        self.prompt_tokens = 0
        self.completion_tokens = 0
        #: `[DONE]` was read
        self.done = False

    def read(self, event: SSEEvent) -> str:
        data = event.data
        if self.done:
            return ""
        if data.strip() == "[DONE]":
            self.done = True
            return ""
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise _malformed(data, "not JSON") from None
        if not isinstance(chunk, dict):
            raise _malformed(data, "not a JSON object")
        if event.event == "error" or chunk.get("error") is not None:
            raise CallError("server", redact(f"the server reported an error mid-stream: {_error_text(chunk)}"))
        self._usage(chunk.get("usage"), data)
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise _malformed(data, "`choices` is not a list")
        text = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise _malformed(data, "a choice is not an object")
            if choice.get("index", 0) == 0:
                text.append(self._choice(choice, data))
        return self._think.feed("".join(text))

    def _usage(self, usage: Any, data: str) -> None:
        if usage is None:
            return
        try:
            self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            self.completion_tokens = int(usage.get("completion_tokens") or 0)
        except (AttributeError, TypeError, ValueError):
            raise _malformed(data, "`usage` is not token counts") from None

    def _choice(self, choice: dict[str, Any], data: str) -> str:
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise _malformed(data, "`delta` is not an object")
        content = delta.get("content")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if (content is not None and not isinstance(content, str)) or (reasoning and not isinstance(reasoning, str)):
            raise _malformed(data, "the delta's text is not a string")
        if reasoning:
            self._reasoning.append(reasoning)
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        if self._logprobs is not None:
            try:
                self._logprobs.extend(parse_logprobs(choice.get("logprobs")) or [])
            except (AttributeError, TypeError, ValueError):
                raise _malformed(data, "`logprobs` is not token log-probabilities") from None
        if content:
            self._content.append(content)
            return content
        return ""

    def flush(self) -> str:
        """The visible text held back until the answer's end (a partial `<think` that never opened a block)."""
        return self._think.flush()

    def result(self, ended: bool, torn: str) -> ChatResult:
        """The whole answer; a body that ended before `[DONE]` (or cut without a finish reason) is a failure."""
        if not self.done and not (ended and self.finish_reason):
            where = f" (cut mid-line: {torn[:_EXCERPT]!r})" if torn else ""
            raise CallError("connection", f"the stream ended before [DONE]{where}")
        raw = "".join(self._content)
        text, think = strip_think(raw)
        return ChatResult(
            text=text,
            raw=raw,
            finish_reason=self.finish_reason,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            logprobs=self._logprobs or None,
            reasoning="".join(self._reasoning) or think,
        )


def _error_text(chunk: dict[str, Any]) -> str:
    error = chunk.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error)[:300]
    return str(error if error is not None else chunk)[:300]
