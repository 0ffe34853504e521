"""The chat-model protocol every caller (judges, the construction pipeline, the three-stage evaluation) uses.

One protocol, so caching, retries, rate limits and cost accounting exist once. Backends live one per file
(`openai_compat.py`, `hf_local.py`), registered in `models/backends.py` and imported on first use, so
`tailor --help` never pays for torch. A failed call is a `CallFailure` value, not an exception: callers count
it, they never lose it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

from tailorbench.schema import Message

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class GenParams:
    """Generation parameters; every field is part of the cache key.

    `reasoning=True` marks a reasoning model: the token budget is sent as `max_completion_tokens` and the
    sampling knobs that such models reject (temperature, top_p) are left out.
    """

    temperature: float | None = 0.0
    max_tokens: int | None = 256
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    reasoning: bool = False
    reasoning_effort: str | None = None
    #: extra request fields passed through verbatim (e.g. vLLM's `guided_choice`); sorted into the cache key
    extra: tuple[tuple[str, Any], ...] = ()

    def key_dict(self) -> dict[str, Any]:
        """Every field as JSON-able values: a fresh dict, built once per instance (asked once per call)."""
        cached = self.__dict__.get("_key_dict_memo")
        if cached is None:
            cached = self._key_dict()
            object.__setattr__(self, "_key_dict_memo", cached)  # not a field: equality and replace() ignore it
        return dict(cached)

    def _key_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["stop"] = list(self.stop) if self.stop else None
        out["extra"] = sorted([k, v] for k, v in self.extra)
        return out


@dataclass
class TokenLogprob:
    """One generated token with its log-probability and the top alternatives at that position."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class ChatResult:
    """A finished call. `text` has `<think>` blocks removed (what parsers see); `raw` keeps everything."""

    text: str
    raw: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    logprobs: list[TokenLogprob] | None = None
    reasoning: str | None = None
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 1

    def to_cache(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "raw": self.raw,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "reasoning": self.reasoning,
        }
        if self.logprobs is not None:
            out["logprobs"] = [[t.token, t.logprob, t.top] for t in self.logprobs]
        return out

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> ChatResult:
        lp = data.get("logprobs")
        return cls(
            text=data["text"],
            raw=data["raw"],
            finish_reason=data.get("finish_reason"),
            prompt_tokens=data.get("prompt_tokens", 0),
            completion_tokens=data.get("completion_tokens", 0),
            cost_usd=data.get("cost_usd"),
            reasoning=data.get("reasoning"),
            logprobs=[TokenLogprob(t, lp_, top) for t, lp_, top in lp] if lp is not None else None,
            cached=True,
            attempts=0,
        )


class CallError(Exception):
    """One attempt of a backend failed (raised by `ModelAPI.generate`, caught by the wrapper, which retries it or
    makes it a `CallFailure`). `kind`: rate_limit | server | timeout | connection | client | bad_response | local;
    `retryable`: whether another attempt may succeed; `retry_after`: seconds the server asked to wait."""

    def __init__(self, kind: str, message: str, *, retryable: bool = True, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass
class CallFailure:
    """A call that did not produce a response after all retries: counted and reported, never dropped."""

    error: str
    kind: str  # rate_limit | server | timeout | connection | client | other
    attempts: int = 1
    latency_s: float = 0.0


@dataclass
class CallStats:
    """Counters a run reports: every request sent, retried, failed or served from the cache."""

    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    def count_error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def add_usage(self, result: ChatResult) -> None:
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        if result.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + result.cost_usd

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class ChatRequest:
    messages: list[Message]
    params: GenParams


@runtime_checkable
class ChatModel(Protocol):
    """What callers need from a chat model. All methods are async; failures come back as CallFailure."""

    spec: str
    backend: str
    model: str
    stats: CallStats
    #: True when `choice_logprobs` reads exact next-token log-probabilities
    supports_logprobs: bool

    async def chat(self, messages: Sequence[Message], params: GenParams) -> ChatResult | CallFailure: ...

    async def chat_many(self, requests: Sequence[ChatRequest]) -> list[ChatResult | CallFailure]: ...

    async def choice_logprobs(
        self, messages: Sequence[Message], choices: Sequence[str], params: GenParams
    ) -> tuple[dict[str, float], ChatResult] | CallFailure:
        """Log-probability of each choice label as the first token of the answer (no generation)."""
        ...

    def is_cached(self, messages: Sequence[Message], params: GenParams, kind: str = "chat") -> bool: ...

    async def preflight(self) -> None:
        """Raise ConfigError with one clear message when the model cannot be used (key, server, name)."""
        ...

    async def aclose(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


def strip_think(content: str) -> tuple[str, str | None]:
    """(text without `<think>...</think>` blocks, the reasoning they held). An unclosed block runs to the end."""
    if "<think>" not in content.lower():
        return content, None
    blocks = _THINK.findall(content)
    reasoning = "\n".join(b[7:].removesuffix("</think>").strip() for b in blocks)
    return _THINK.sub("", content).strip(), reasoning or None
