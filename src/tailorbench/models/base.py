"""The chat-model protocol every caller (judges, the construction pipeline, the three-stage evaluation) uses.

One protocol, so caching, retries, rate limits and cost accounting exist once. Backends live one per file
(`openai_compat.py`, `hf_local.py`) and are imported lazily by `make_chat_model`, so `tailor --help` never pays
for torch. A failed call is a `CallFailure` value, not an exception: callers count it, they never lose it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

from tailorbench.errors import ConfigError

Message = dict[str, str]

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


@dataclass(frozen=True)
class ModelSpec:
    backend: str  # openai | hf
    model: str
    base_url: str | None = None


def parse_model_spec(spec: str) -> ModelSpec:
    """`openai:MODEL`, `openai:MODEL@http://host:port/v1`, `hf:PATH_OR_HUB_ID`; anything else is a ConfigError."""
    backend, sep, rest = spec.strip().partition(":")
    backend = backend.strip().lower()
    rest = rest.strip()
    if not sep or not rest:
        raise ConfigError(f"bad model spec {spec!r}: expected openai:MODEL, openai:MODEL@URL or hf:PATH")
    if backend == "openai":
        model, at, url = rest.partition("@")
        model, url = model.strip(), url.strip()
        if not model:
            raise ConfigError(f"bad model spec {spec!r}: the model name is empty")
        if at:
            _check_base_url(spec, url)
        return ModelSpec("openai", model, url.rstrip("/") if at else None)
    if backend == "hf":
        return ModelSpec("hf", rest)
    raise ConfigError(f"unknown model backend {backend!r} in {spec!r}; known: openai, hf")


def _check_base_url(spec: str, url: str) -> None:
    """An http(s) URL with a host and, if any, a numeric port: a typo is a ConfigError, not a traceback."""
    from urllib.parse import urlsplit

    from tailorbench.redact import redact

    shown = redact(spec)
    if not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(f"bad model spec {shown!r}: the part after @ must be an http(s):// base URL")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (reading it validates it)
    except ValueError as exc:
        raise ConfigError(f"bad model spec {shown!r}: {exc} (the port must be a number from 0 to 65535)") from None
    if not parts.hostname:
        raise ConfigError(f"bad model spec {shown!r}: the base URL has no host")


def make_chat_model(spec: str, options: dict[str, Any] | None = None) -> ChatModel:
    """Build a chat model from its spec; backend options (concurrency, cache, prices ...) come in `options`."""
    import inspect

    parsed = parse_model_spec(spec)
    options = dict(options or {})
    cls: Any
    if parsed.backend == "openai":
        from tailorbench.models.openai_compat import OpenAICompatModel

        cls, kwargs = OpenAICompatModel, {"base_url": parsed.base_url}
    else:
        from tailorbench.models.hf_local import HFChatModel

        cls, kwargs = HFChatModel, {}
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "model", "spec", "base_url"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ConfigError(
            f"option(s) {', '.join(unknown)} do not apply to the {parsed.backend} backend; "
            f"it takes: {', '.join(sorted(accepted))}"
        )
    model: ChatModel = cls(parsed.model, spec=spec, **kwargs, **options)
    return model
