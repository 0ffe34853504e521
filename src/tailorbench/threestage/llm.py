"""Every stage's model calls in one place: prompts in, parsed answers out, with every invalid or failed answer
counted. Calls go through `models/` (cache, retries, rate limits, cost), never to a backend directly."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import CallFailure, ChatModel, ChatRequest, GenParams, Message

T = TypeVar("T")


@dataclass
class Answer(Generic[T]):
    """One parsed answer: `value` is None unless `status` is ok; `raw` keeps the model's text."""

    value: T | None
    status: str  # ok | invalid | failed
    raw: str = ""
    error: str | None = None
    #: the backend's finish reason ("length" = cut at max_tokens); None for failed calls
    finish_reason: str | None = None


@dataclass
class Batch(Generic[T]):
    answers: list[Answer[T]]
    counts: Counter[str] = field(default_factory=Counter)
    usage: dict[str, Any] = field(default_factory=dict)

    def accounting(self) -> dict[str, Any]:
        return {"calls": len(self.answers), **{k: self.counts.get(k, 0) for k in ("ok", "invalid", "failed")},
                "usage": self.usage}


def ask(
    model: str | ChatModel,
    prompts: Sequence[list[Message]],
    parse: Callable[[str], T | None],
    params: GenParams | None = None,
    options: dict[str, Any] | None = None,
) -> Batch[T]:
    """Send all prompts (concurrency is the backend's), parse each text; None from `parse` means invalid."""
    params = params or GenParams(temperature=0.0, max_tokens=256)
    owned = isinstance(model, str)
    chat = make_chat_model(model, options) if isinstance(model, str) else model

    async def go() -> list[Any]:
        try:
            if prompts and not all(chat.is_cached(p, params) for p in prompts):
                await chat.preflight()
            return await chat.chat_many([ChatRequest(list(p), params) for p in prompts])
        finally:
            if owned:
                await chat.aclose()

    from tailorbench.aio import run_sync  # also inside a running event loop (a notebook)

    results = run_sync(go())
    out: Batch[T] = Batch([])
    for res in results:
        if isinstance(res, CallFailure):
            ans: Answer[T] = Answer(None, "failed", "", f"{res.kind}: {res.error}")
        else:
            value = parse(res.text)
            ans = (Answer(value, "ok", res.text, finish_reason=res.finish_reason) if value is not None
                   else Answer(None, "invalid", res.text, "answer could not be parsed", res.finish_reason))
        out.counts[ans.status] += 1
        out.answers.append(ans)
    out.usage = chat.stats.as_dict()
    return out
