"""How tailorbench talks to models: one module per backend. Heavy libraries are imported inside backends.

The events of a streamed call (`Model.stream`: `TextDelta`, `StreamDone`, `StreamEvent`) are exported here for
callers that show answers as they arrive (the arena), imported on first use so that importing one light module
of the package (the call cache) stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tailorbench.models.streaming import StreamDone, StreamEvent, TextDelta

__all__ = ["StreamDone", "StreamEvent", "TextDelta"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tailorbench.models import streaming

        return getattr(streaming, name)
    raise AttributeError(f"module 'tailorbench.models' has no attribute {name!r}")
