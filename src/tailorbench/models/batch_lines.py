"""What a provider's batch API hands back, in one shape for every provider (models/batch_openai.py,
models/batch_anthropic.py), so the engine (models/batch_engine.py) never looks at a provider's format.

Why a module of its own: the providers and the engine both need these types, and neither may import the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from tailorbench.models.base import ChatResult, GenParams, Message
from tailorbench.registry import Registry

#: a backend's batch API by backend name: a class taking the backend (`ModelAPI`) and implementing `BatchProvider`
BATCH_APIS: Registry[type[Any]] = Registry(
    "batch API", "tailorbench.batch_apis",
    lazy={"openai": "tailorbench.models.batch_openai", "anthropic": "tailorbench.models.batch_anthropic"},
)


@dataclass(frozen=True)
class LineError:
    """A request the batch did not answer. `resubmit`: it may be sent again in a new batch (expired, cancelled,
    a retryable error such as 429/5xx); otherwise it is a failed call like a synchronous one."""

    kind: str
    message: str
    resubmit: bool = False


Outcome = ChatResult | LineError


@dataclass
class Poll:
    """A batch's state as the provider reports it. `state`: running | ended | failed (the whole batch refused,
    e.g. its input file did not validate: `detail` says why)."""

    state: str
    status: str
    counts: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class Results:
    """A finished batch's answers by custom_id, and the lines that could not be read (named by file and line)."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    malformed: list[str] = field(default_factory=list)


class BatchProvider(Protocol):
    """One provider's batch API, through its official SDK."""

    name: str
    #: the provider's documented limits for one batch
    max_requests: int
    max_bytes: int

    def line(self, custom_id: str, messages: Sequence[Message], params: GenParams) -> bytes: ...

    async def check(self) -> None:
        """ConfigError when the server has no batch API (or refuses the key): before any request is sent."""

    async def submit(self, chunk: str, lines: Sequence[bytes], note: Callable[..., None]) -> str:
        """Create one batch of `lines` and return its id; `note(**fields)` records what must survive a crash
        before the next step (e.g. the uploaded file's id before the batch is created)."""
        ...

    async def recover(self, entry: dict[str, Any]) -> str | None:
        """The id of the batch a crash left unrecorded (`entry` was written, its batch id was not), or None."""
        ...

    async def poll(self, batch_id: str) -> Poll: ...

    async def results(self, batch_id: str, poll: Poll) -> Results: ...

    async def cancel(self, batch_id: str) -> None: ...

    async def aclose(self) -> None: ...


def read_lines(data: bytes, where: str, each: Callable[[dict[str, Any]], tuple[str, Outcome]], into: Results) -> None:
    """Every JSONL line of a result file into `into`: a line that is not JSON, or not the documented shape, is
    named in `into.malformed` (file and line number), never skipped silently."""
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
            if not isinstance(row, dict):
                raise TypeError("not a JSON object")
            custom_id, outcome = each(row)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            into.malformed.append(f"{where} line {number}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        into.outcomes[custom_id] = outcome


def status_outcome(status: int, message: str) -> LineError:
    """A request answered with an HTTP error status inside a batch: retried (resubmitted) as the synchronous
    path retries it (408, 409, 429, 5xx), otherwise a failed call."""
    if status == 429:
        return LineError("rate_limit", f"429 rate limited: {message}", resubmit=True)
    kind = "server" if status >= 500 else ("timeout" if status == 408 else "client")
    return LineError(kind, f"HTTP {status}: {message}", resubmit=status >= 500 or status in (408, 409))
