"""One model wrapper over thin backends (the shape of Inspect AI's `Model` / `ModelAPI`).

Why: cache, retries, concurrency, de-duplication of identical requests in flight, accounting (tokens, cost,
error kinds, retries) and redaction exist once, for every backend alike, so a new backend cannot get them
wrong. A backend (`ModelAPI`) implements one attempt of a call and raises `CallError` (classified: kind,
retryable, Retry-After) or `CredentialsError` (refused key: the run stops); `Model` does the rest and is what
every caller gets from `models.backends.make_chat_model` (it satisfies `base.ChatModel`).

`Model.stream` is the same call with the answer's pieces yielded as they arrive (`model_stream.py`).

Cache keys are `cache.call_key(backend, model, public base URL, kind, messages, params [+ choices])`, with
`kind` `chat`, or `choice` for a backend's native label scoring (`ModelAPI.choose`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from tailorbench.errors import CredentialsError

# CallError lives with the other call records (base.py); it is imported from here too, where backends always found it
from tailorbench.models.base import CallError, CallFailure, CallStats, ChatRequest, ChatResult, GenParams, Message
from tailorbench.models.cache import CallCache, call_key, shared_cache
from tailorbench.models.limiter import Limiter
from tailorbench.models.model_stream import stream_events
from tailorbench.models.pricing import PriceTable
from tailorbench.models.streaming import StreamEvent
from tailorbench.models.waiting import Heartbeat
from tailorbench.options import as_bool, as_float, as_int
from tailorbench.redact import redact

#: OpenAI returns at most 20 alternatives per position
MAX_TOP_LOGPROBS = 20


@runtime_checkable
class ModelAPI(Protocol):
    """What a backend implements: one attempt of a call, nothing else."""

    backend: str
    model: str
    spec: str
    #: the base URL as it may be shown and stored (None for local models)
    public_base_url: str | None
    supports_logprobs: bool
    #: True for remote APIs (the wrapper limits concurrency and retries), False for local models (they batch)
    remote: bool

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult: ...

    async def preflight(self) -> None: ...

    async def aclose(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


#: batch mode (models/batch_engine.py): remote backends with a batch API (`BATCH_APIS`)
BATCH_OPTIONS = frozenset({"batch", "batch_poll_s", "batch_wait_s", "batch_max_requests", "batch_max_bytes"})
#: options of the wrapper, by kind of backend (the rest go to the backend's own class)
REMOTE_OPTIONS = frozenset({"concurrency", "adaptive", "max_concurrency", "max_retries", "backoff_base", "backoff_max",
                            "prices", "cache_path", "cache_policy", "seed"}) | BATCH_OPTIONS
LOCAL_OPTIONS = frozenset({"cache_path", "cache_policy", "seed", "prices"})


class Model:
    """Cache, retries, concurrency, in-flight de-duplication and accounting around one `ModelAPI`."""

    def __init__(
        self,
        api: Any,
        *,
        concurrency: int | str = 16,
        adaptive: bool | str = True,
        max_concurrency: int | str = 512,
        max_retries: int | str = 6,
        backoff_base: float | str = 0.5,
        backoff_max: float | str = 30.0,
        prices: str | dict[str, Any] | None = None,
        cache: CallCache | None = None,
        cache_path: str | None = None,
        cache_policy: str | None = None,
        seed: int | str = 0,
    ) -> None:
        self.api = api
        self.spec: str = api.spec
        self.backend: str = api.backend
        self.model: str = api.model
        self.supports_logprobs: bool = bool(api.supports_logprobs)
        self.stats = CallStats()
        self.remote = bool(getattr(api, "remote", True))
        self.max_retries = as_int("max_retries", max_retries, minimum=0) if self.remote else 0
        self.backoff_base = as_float("backoff_base", backoff_base, minimum=0.0)
        self.backoff_max = as_float("backoff_max", backoff_max, minimum=0.0)
        start = as_int("concurrency", concurrency, minimum=1)
        self.start_concurrency = start
        #: None for local models: they batch what arrives together (`batch_size`)
        self.limiter: Limiter | None = None
        if self.remote:
            self.limiter = Limiter(start, adaptive=as_bool("adaptive", adaptive),
                                   maximum=as_int("max_concurrency", max_concurrency, minimum=1))
            if hasattr(api, "max_connections"):
                api.max_connections = self.limiter.maximum  # a pool as large as the calls that may run at once
        self.prices = PriceTable.load(prices)
        self.cache = cache if cache is not None else shared_cache(cache_path, cache_policy)
        self._rng = random.Random(as_int("seed", seed))
        #: calls sent and not yet answered, by cache key: an identical request waits for the first
        self._inflight: dict[str, asyncio.Future[ChatResult | CallFailure]] = {}
        self.deduplicated = 0
        #: batch mode's engine (`use_batches`), else None: calls are requests
        self.batcher: Any = None
        #: calls between a failed attempt and their outcome, the last error, since when: what the line says
        self._retrying = 0
        self._last_error = ""
        self._failing_since: float | None = None
        self._heartbeat = Heartbeat(self._waiting_line)

    def use_batches(self, batcher: Any) -> None:
        """Send the calls that miss the cache as provider batches (models/batch_engine.py). No concurrency
        limit then: every call a caller has is handed over at once, so batches are as large as the work."""
        self.batcher = batcher
        self.limiter = None

    def bind_run_dir(self, run_dir: Any) -> None:
        """Where batch mode records its batches (the run directory); nothing to do without batch mode."""
        if self.batcher is not None:
            self.batcher.bind(run_dir)

    # -- what callers see (base.ChatModel) ---------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        """Backend attributes (`transport`, `batch_size`, `base_url` ...) read through the wrapper."""
        if name.startswith("__") or name == "api":
            raise AttributeError(name)
        return getattr(self.api, name)

    async def chat(self, messages: Sequence[Message], params: GenParams) -> ChatResult | CallFailure:
        return await self._call(list(messages), params)

    def stream(self, messages: Sequence[Message], params: GenParams) -> AsyncGenerator[StreamEvent, None]:
        """The answer as it is generated: `TextDelta`s, then one `StreamDone` (`models/model_stream.py`). Same
        cache, concurrency, retries (only until the first piece reached the caller) and accounting as `chat`."""
        return stream_events(self, list(messages), params)

    async def chat_many(self, requests: Sequence[ChatRequest]) -> list[ChatResult | CallFailure]:
        return list(await asyncio.gather(*(self._call(list(r.messages), r.params) for r in requests)))

    async def choice_logprobs(
        self, messages: Sequence[Message], choices: Sequence[str], params: GenParams
    ) -> tuple[dict[str, float], ChatResult] | CallFailure:
        """Each label's log-probability as the first token of the answer. A backend with native scoring
        (`choose`, e.g. a local model's one forward pass) gives exact values; otherwise one generated token
        with its top alternatives, each label scored by the best first token that spells it (`A`, ` A`);
        labels outside the top alternatives are left out."""
        if hasattr(self.api, "choose"):
            outcome = await self._call(list(messages), params, tuple(choices))
            if isinstance(outcome, CallFailure):
                return outcome
            assert outcome.logprobs
            return dict(outcome.logprobs[0].top), outcome
        params = replace(params, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=MAX_TOP_LOGPROBS,
                         reasoning=False)
        outcome = await self._call(list(messages), params)
        if isinstance(outcome, CallFailure):
            return outcome
        if not outcome.logprobs:
            return CallFailure(f"{self.spec} returned no logprobs (the server may not support them)", "no_logprobs")
        first = outcome.logprobs[0]
        candidates = dict(first.top)
        candidates.setdefault(first.token, first.logprob)
        scores: dict[str, float] = {}
        for token, logprob in candidates.items():
            label = token.strip()
            if label in choices and logprob > scores.get(label, float("-inf")):
                scores[label] = logprob
        return scores, outcome

    def is_cached(self, messages: Sequence[Message], params: GenParams, kind: str = "chat") -> bool:
        choices: tuple[str, ...] = ()
        if hasattr(self.api, "choose") and params.logprobs and params.max_tokens == 1:
            choices = ("A", "B")  # the judge's logprobs path asks a native scorer for labels A/B
        return self.cache.contains(self._key(list(messages), params, choices))

    async def preflight(self) -> None:
        await self.api.preflight()
        if self.batcher is not None:
            await self.batcher.check()

    async def aclose(self) -> None:
        await self._heartbeat.aclose()
        if self.batcher is not None:
            await self.batcher.aclose()
        await self.api.aclose()
        self.cache.flush()  # what this model stored, on disk before the caller moves on

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.api.describe())
        if self.limiter is not None:
            out["concurrency"] = {"start": self.start_concurrency, "adaptive": self.limiter.adaptive,
                                  "final": int(self.limiter.limit), "peak": self.limiter.peak,
                                  "cuts": self.limiter.cuts}
            out["max_retries"] = self.max_retries
            out["price_per_1m"] = self.prices.lookup(self.model)
        if self.batcher is not None:
            out["batch"] = self.batcher.describe()
        out["cache"] = self.cache.describe()
        out["stats"] = {**self.stats.as_dict(), "deduplicated": self.deduplicated}
        return out

    # -- the call ----------------------------------------------------------------------------------------

    def _key(self, messages: list[Message], params: GenParams, choices: tuple[str, ...] = ()) -> str:
        payload = params.key_dict()
        if choices:
            payload["choices"] = list(choices)
        # a local backend's settings that change its answers (dtype, quantization ...): another setting, another key
        identity = getattr(self.api, "cache_identity", None)
        model = f"{self.model}|{identity}" if identity else self.model
        return call_key(self.backend, model, self.api.public_base_url, "choice" if choices else "chat",
                        messages, payload)

    async def _call(self, messages: list[Message], params: GenParams,
                    choices: tuple[str, ...] = ()) -> ChatResult | CallFailure:
        self.stats.calls += 1
        key = self._key(messages, params, choices)
        result = self._cached(key)
        if result is not None:
            return result
        running = self._inflight.get(key)
        if running is not None:  # the same request is in flight: its answer is this one's
            self.deduplicated += 1
            return await asyncio.shield(running)
        future: asyncio.Future[ChatResult | CallFailure] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            if self.batcher is not None:
                outcome = await self.batcher.call(key, messages, params)
            else:
                outcome = await self._attempts(messages, params, choices)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody logs it as unhandled
            raise
        finally:
            self._inflight.pop(key, None)
        if isinstance(outcome, ChatResult):
            if self.batcher is None:  # (batch mode stored it before marking its batch ended)
                # the verdict's prediction line is what a resume reads
                self._store(key, outcome, "choice" if choices else "chat")
            else:
                self.stats.add_usage(outcome)
        else:
            self.stats.failures += 1
        future.set_result(outcome)
        return outcome

    def _cached(self, key: str) -> ChatResult | None:
        """The stored answer of `key` (counted as a cache hit, its usage added), or None."""
        stored = self.cache.get(key)
        if stored is None:
            return None
        self.stats.cache_hits += 1
        result = ChatResult.from_cache(stored)
        self.stats.add_usage(result)
        return result

    def _store(self, key: str, result: ChatResult, kind: str = "chat") -> None:
        """A fresh answer into the call cache (committed within cache.FLUSH_AFTER_S) and the accounting."""
        self.cache.put(key, self.backend, self.model, self.api.public_base_url, kind, result.to_cache())
        self.stats.add_usage(result)

    async def _attempts(self, messages: list[Message], params: GenParams,
                        choices: tuple[str, ...]) -> ChatResult | CallFailure:
        started = time.perf_counter()
        limiter = self.limiter
        attempt = 0
        waiting = False  # counted in `_retrying` (the progress line) until this call ends
        try:
            while True:
                if limiter is not None:
                    await limiter.acquire()
                self.stats.requests += 1
                try:
                    if choices:
                        result: ChatResult = await self.api.choose(messages, choices, params)
                    else:
                        result = await self.api.generate(messages, params)
                except CallError as exc:
                    error = exc
                except CredentialsError:
                    self._release()
                    self.stats.count_error("auth")
                    raise
                except BaseException:
                    self._release()
                    raise
                else:
                    self._release(ok=True)
                    return self._succeeded(result, attempt, started)
                self._release(error)
                decision = self._after_error(error, attempt, started)
                if isinstance(decision, CallFailure):
                    return decision
                attempt += 1
                waiting = await self._wait_to_retry(decision, waiting)
        finally:
            if waiting:
                self._retrying -= 1

    # -- what one attempt's outcome does (shared by `_attempts` and the streamed call, `model_stream.py`) -------

    def _release(self, error: CallError | None = None, *, ok: bool = False) -> None:
        """Give the attempt's concurrency slot back; a success (`ok`) grows the limit, a 429 shrinks it and
        pauses new calls."""
        limiter = self.limiter
        if limiter is None:
            return
        if error is not None and error.kind == "rate_limit":
            limiter.on_rate_limit(error.retry_after)
        limiter.release()
        if ok:
            limiter.on_success()

    def _succeeded(self, result: ChatResult, attempt: int, started: float, priced: bool = True) -> ChatResult:
        """A successful attempt's result with its cost (from the price table when the backend gave none; not
        when `priced` is False: its usage is unknown), latency and attempt count."""
        if result.cost_usd is None and priced:
            result.cost_usd = self.prices.cost(self.model, result.prompt_tokens, result.completion_tokens)
        if not result.latency_s:
            result.latency_s = time.perf_counter() - started
        result.attempts = attempt + 1
        self._failing_since = None  # the provider answers again
        return result

    def _after_error(self, error: CallError, attempt: int, started: float) -> CallFailure | float:
        """After failed attempt number `attempt` (from 0): counted; the call's failure when it may not be
        retried (or has been, `max_retries` times), else the seconds to wait before the next attempt."""
        self.stats.count_error(error.kind)
        message = redact(error.message)
        if not error.retryable:
            return CallFailure(message, error.kind, attempt + 1, time.perf_counter() - started)
        if attempt >= self.max_retries:
            return CallFailure(f"{message} (gave up after {attempt + 1} attempts)", error.kind, attempt + 1,
                               time.perf_counter() - started)
        self.stats.retries += 1
        delay = self._backoff(attempt)
        if error.retry_after is not None:
            delay = max(delay, error.retry_after)
        self._last_error = f"{error.kind}: {message}"
        return delay

    async def _wait_to_retry(self, delay: float, waiting: bool) -> bool:
        """Sleep `delay` before the next attempt; the first wait of a call counts it among the calls retrying
        (the progress line) until the caller's `finally` takes it off. Returns True (the call is waiting)."""
        if not waiting:
            self._retrying += 1
            self._failing_since = self._failing_since or time.perf_counter()
            self._heartbeat.ensure()
        await asyncio.sleep(delay)
        return True

    def _waiting_line(self) -> str | None:
        """What the calls retrying wait for (`waiting.Heartbeat`, every 30 s), or None once none is retrying."""
        if not self._retrying:
            return None
        since = f" for {time.perf_counter() - self._failing_since:.0f} s" if self._failing_since else ""
        return (f"{redact(self.spec)}: {self._retrying} call(s) waiting to be retried: the provider has failed"
                f"{since} (last: {self._last_error}); {self.stats.requests} requests so far")

    def _backoff(self, attempt: int) -> float:
        # exponential with "equal jitter" from a seeded generator (reproducible schedules, no thundering herd)
        delay = min(self.backoff_max, self.backoff_base * (2**attempt))
        return delay / 2 + self._rng.random() * delay / 2
