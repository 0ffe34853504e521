"""The one way the arena gets an answer: `Model.stream` (models/model_stream.py: text pieces as they arrive,
then exactly one `StreamDone`), or, for a model object without it, `Model.chat` delivered as one piece. Either
way the caller sees the same events, and a failure is a `StreamDone` carrying a `CallFailure`, never an
exception. Also the request's call-cache key, which a deletion request uses to remove the participant's answers
from the call cache."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from tailorbench.models.base import ChatResult, GenParams, Message
from tailorbench.models.streaming import StreamDone, StreamEvent, TextDelta


async def answer_events(model: Any, messages: Sequence[Message], params: GenParams) -> AsyncIterator[StreamEvent]:
    """The answer's events: `TextDelta`s, then one `StreamDone`."""
    if hasattr(model, "stream"):
        async for event in model.stream(messages, params):
            yield event
        return
    result = await model.chat(messages, params)
    if isinstance(result, ChatResult) and result.text:
        yield TextDelta(result.text)
    yield StreamDone(result, bool(getattr(result, "cached", False)))


def request_key(model: Any, messages: Sequence[Message], params: GenParams) -> str | None:
    """The call cache's key of this request (models/cache.call_key, as the wrapper computes it), or None for a
    model object that is not the wrapper."""
    from tailorbench.models.cache import call_key

    api = getattr(model, "api", None)
    if api is None:
        return None
    identity = getattr(api, "cache_identity", None)
    name = f"{api.model}|{identity}" if identity else str(api.model)
    return call_key(api.backend, name, api.public_base_url, "chat", list(messages), params.key_dict())
