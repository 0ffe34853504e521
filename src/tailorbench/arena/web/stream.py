"""One answer of a battle as server-sent events: `delta` events (the piece as a JSON string, so line breaks
survive), then `done`, or `failed` with the failure's kind. A gold battle's answers and answers already ended come
whole from the database; answers being generated come piece by piece as the model sends them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any


def event(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def side_events(site: Any, battle: dict[str, Any], side: str) -> AsyncIterator[bytes]:
    yield b": stream\n\n"  # headers and a first byte at once: the page knows the stream is open
    if battle["gold"]:
        yield event("delta", battle[f"answer_{side}"] or "")
        yield event("done", "")
        return
    async for kind, text in site.generator.follow(battle["ref"], side):
        yield event(kind, text)
