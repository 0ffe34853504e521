"""`Model.stream`: one call whose answer reaches the caller piece by piece, with everything `Model.chat` has.

Why here and not in each backend: a streamed call must be cached, limited, retried and counted exactly like a
`chat` of the same request (the arena streams answers that a later evaluation may ask for again), so the wrapper
owns it and a backend (`streaming.StreamingAPI`) only reads its stream. What the caller sees:

- a cache hit: the stored answer as one `TextDelta`, then `StreamDone(result, cached=True)`; the same request
  in flight (a `chat` or another stream): its answer, once it has one, the same way with `cached=False`;
- a backend without `stream` (local models, Anthropic, batch mode): the whole `chat` answer as one `TextDelta`;
- otherwise the backend's pieces as they arrive, under the model's concurrency limit. A failed attempt is
  retried with the wrapper's back-off only while no piece has reached the caller; after that a failure (a
  dropped connection, a server error mid-stream, a malformed chunk) ends the stream with
  `StreamDone(CallFailure)`, counted as a failed call of its kind, and nothing is cached. A finished stream's
  answer is cached under the same key as `chat`'s, so either finds the other's answer.

Every stream ends with exactly one `StreamDone`: a refused key or an unusable configuration is a `CallFailure`
(kind `auth` / `config`), not an exception. A caller that stops reading (closes the iterator) ends the call:
nothing is cached or counted as failed, and a caller waiting for the same request gets a `cancelled` failure.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, Protocol

from tailorbench.errors import ConfigError, CredentialsError
from tailorbench.models.base import CallError, CallFailure, CallStats, ChatResult, GenParams, Message
from tailorbench.models.limiter import Limiter
from tailorbench.models.streaming import StreamDone, StreamEvent, StreamingAPI, TextDelta
from tailorbench.redact import redact


class Wrapper(Protocol):
    """What a streamed call uses of the wrapper (`model.Model`, which imports this module, not the other way)."""

    api: Any
    stats: CallStats
    limiter: Limiter | None
    batcher: Any
    deduplicated: int
    _inflight: dict[str, asyncio.Future[ChatResult | CallFailure]]
    _retrying: int

    def _key(self, messages: list[Message], params: GenParams, choices: tuple[str, ...] = ()) -> str: ...

    def _cached(self, key: str) -> ChatResult | None: ...

    def _store(self, key: str, result: ChatResult, kind: str = "chat") -> None: ...

    async def _call(self, messages: list[Message], params: GenParams,
                    choices: tuple[str, ...] = ()) -> ChatResult | CallFailure: ...

    def _release(self, error: CallError | None = None, *, ok: bool = False) -> None: ...

    def _succeeded(self, result: ChatResult, attempt: int, started: float, priced: bool = True) -> ChatResult: ...

    def _after_error(self, error: CallError, attempt: int, started: float) -> CallFailure | float: ...

    async def _wait_to_retry(self, delay: float, waiting: bool) -> bool: ...


#: what a caller waiting for an abandoned stream's answer gets
ABANDONED = "the streamed call this one waited for was closed by its caller before it finished"


async def stream_events(model: Wrapper, messages: list[Message],
                        params: GenParams) -> AsyncGenerator[StreamEvent, None]:
    """The events of one streamed call (see the module's docstring)."""
    if model.batcher is not None or not isinstance(model.api, StreamingAPI):
        async for event in _whole(model, messages, params):
            yield event
        return
    model.stats.calls += 1
    key = model._key(messages, params)
    stored = model._cached(key)
    if stored is not None:
        yield TextDelta(stored.text)
        yield StreamDone(stored, cached=True)
        return
    running = model._inflight.get(key)
    if running is not None:  # the same request is in flight: its answer is this one's
        model.deduplicated += 1
        for event in _replay(await asyncio.shield(running)):
            yield event
        return
    future: asyncio.Future[ChatResult | CallFailure] = asyncio.get_running_loop().create_future()
    model._inflight[key] = future
    outcome: ChatResult | CallFailure | None = None
    try:
        async with aclosing(_attempts(model, messages, params)) as attempts:
            async for step in attempts:
                if isinstance(step, TextDelta):
                    yield step
                else:
                    outcome = step
    except (GeneratorExit, asyncio.CancelledError):
        future.set_result(CallFailure(ABANDONED, "cancelled"))
        raise
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()  # retrieved: waiters re-raise it, nobody logs it as unhandled
        raise
    finally:
        model._inflight.pop(key, None)
    assert outcome is not None, "a stream's attempts always end with a result or a failure"
    if isinstance(outcome, ChatResult):
        model._store(key, outcome)
    else:
        model.stats.failures += 1
    future.set_result(outcome)
    yield StreamDone(outcome)


def _replay(outcome: ChatResult | CallFailure) -> list[StreamEvent]:
    """A whole answer as a stream: its text as one piece, then its end."""
    if isinstance(outcome, CallFailure):
        return [StreamDone(outcome)]
    return [TextDelta(outcome.text), StreamDone(outcome, cached=outcome.cached)]


async def _whole(model: Wrapper, messages: list[Message], params: GenParams) -> AsyncGenerator[StreamEvent, None]:
    """A backend without streaming: `chat`'s answer (cache, retries, accounting and all) as one piece."""
    try:
        outcome = await model._call(messages, params)
    except (CredentialsError, ConfigError) as exc:
        model.stats.failures += 1
        outcome = CallFailure(redact(str(exc)), _setup_kind(exc))
    for event in _replay(outcome):
        yield event


def _setup_kind(exc: Exception) -> str:
    return "auth" if isinstance(exc, CredentialsError) else "config"


async def _attempts(model: Wrapper, messages: list[Message],
                    params: GenParams) -> AsyncGenerator[TextDelta | ChatResult | CallFailure, None]:
    """The backend's pieces, attempt after attempt until one finishes or the call fails; ends with the
    `ChatResult` (cost and latency filled in) or the `CallFailure`. Retries only while nothing was shown."""
    api: StreamingAPI = model.api
    started = time.perf_counter()
    attempt = 0
    waiting = False  # counted in the wrapper's `_retrying` (the progress line) until this call ends
    try:
        while True:
            if model.limiter is not None:
                await model.limiter.acquire()
            model.stats.requests += 1
            shown = 0
            result: ChatResult | None = None
            try:
                async with aclosing(api.stream(messages, params)) as pieces:
                    async for piece in pieces:
                        if isinstance(piece, ChatResult):
                            result = piece
                        elif piece.text:
                            shown += len(piece.text)
                            yield piece
                if result is None:
                    raise CallError("bad_response", "the stream ended without its result")
            except CallError as exc:
                error = exc
            except (CredentialsError, ConfigError) as exc:
                model._release()
                model.stats.count_error(_setup_kind(exc))
                yield CallFailure(redact(str(exc)), _setup_kind(exc), attempt + 1, time.perf_counter() - started)
                return
            except BaseException:
                model._release()
                raise
            else:
                model._release(ok=True)
                # a server that sent no usage chunk: tokens unknown (0), and so is the cost (None, never 0)
                usage = bool(result.prompt_tokens or result.completion_tokens)
                yield model._succeeded(result, attempt, started, priced=usage)
                return
            model._release(error)
            if shown:  # part of the answer was shown: another attempt would show a different one
                model.stats.count_error(error.kind)
                yield CallFailure(redact(f"the stream broke off after {shown} characters: {error.message}"),
                                  error.kind, attempt + 1, time.perf_counter() - started)
                return
            decision = model._after_error(error, attempt, started)
            if isinstance(decision, CallFailure):
                yield decision
                return
            attempt += 1
            waiting = await model._wait_to_retry(decision, waiting)
    finally:
        if waiting:
            model._retrying -= 1
