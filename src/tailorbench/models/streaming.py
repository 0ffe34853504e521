"""Streamed answers: the events `Model.stream` yields, and the server-sent-events parser the streaming backends read
their bodies with.

Why events rather than an exception-raising iterator: a caller that shows an answer as it arrives (the arena's
participant page) must be able to tell a finished answer from one cut midway without wrapping every read in a
try block, and the wrapper must count a cut stream as a failed call exactly like a failed `chat`. So a stream is
zero or more `TextDelta`s and exactly one `StreamDone`, whose `result` is the whole `ChatResult` (text, usage,
cost) or a `CallFailure`.

`SSEParser` reads a `text/event-stream` body in the pieces the network hands over (WHATWG's "server-sent
events" rules: LF, CR or CRLF line ends, a CRLF split between two pieces, comment lines, multi-line `data`,
UTF-8 characters split between pieces); it knows nothing about OpenAI's chunks, which `openai_stream.py` reads.
`StreamingAPI` is what a backend implements to stream.
`ThinkFilter` holds `<think>` blocks back from the text shown while it streams, as `base.strip_think` removes
them from a finished answer.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Protocol, Union, runtime_checkable

from tailorbench.models.base import CallFailure, ChatResult, GenParams, Message


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer, in order; the pieces of a finished stream join into its result's `text`."""

    text: str


@dataclass(frozen=True)
class StreamDone:
    """The last event of every stream: the whole answer (`ChatResult`, with usage and cost) or the failure
    (`CallFailure`: a stream cut after some text is a failure too, and nothing of it is cached). `cached`: the
    answer came from the call cache (it was replayed as one `TextDelta`)."""

    result: ChatResult | CallFailure
    cached: bool = False


#: what `Model.stream` yields (`Union`, not `|`: this alias is evaluated at import on Python 3.10)
StreamEvent = Union[TextDelta, StreamDone]  # noqa: UP007

@runtime_checkable
class StreamingAPI(Protocol):
    """What a backend that streams adds to `model.ModelAPI` (optional: `Model.stream` gives a backend without it
    its whole `generate` answer as one piece). One attempt: the answer's pieces as `TextDelta`s, then the whole
    `ChatResult` (usage from the stream's last chunk); any failure, before or after the first piece, raises
    `CallError` (or `CredentialsError`), and the wrapper decides what it means."""

    def stream(
        self, messages: Sequence[Message], params: GenParams
    ) -> AsyncGenerator[TextDelta | ChatResult, None]: ...


#: a line longer than this is not a server-sent event any client should buffer (a broken or hostile server)
MAX_LINE_CHARS = 8 * 1024 * 1024
_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEError(ValueError):
    """The body is not a readable event stream (a line past `MAX_LINE_CHARS`)."""


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its `event` field (`message` when none was given) and its data lines joined by LF."""

    data: str
    event: str = "message"


class SSEParser:
    """Incremental `text/event-stream` parser: `feed` the body's pieces as they arrive, get the events they
    complete; `close` at the end of the body.

    An event is dispatched at the blank line that ends it. `data` lines are joined with LF; a line starting with
    `:` is a comment (keep-alives); `event` names the event; `id` and `retry` are read and ignored (a call is not
    resumed from an id); a field name without a colon has an empty value; one space after the colon is dropped.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""
        self._data: list[str] = []
        self._event = ""
        self._skip_lf = False
        self._started = False
        #: an unterminated last line that `close` dropped (a body cut mid-line), for the caller's message
        self.torn = ""

    def feed(self, piece: bytes | str) -> list[SSEEvent]:
        text = self._decoder.decode(piece) if isinstance(piece, bytes) else piece
        return self._lines(text)

    def close(self) -> list[SSEEvent]:
        """The end of the body: an event whose lines all ended but whose blank line never came is dispatched
        (servers that end the body right after `data: [DONE]\\n`); an unterminated last line is a torn one,
        left in `torn` and not read."""
        events = self._lines(self._decoder.decode(b"", final=True))
        self.torn, self._tail = self._tail, ""
        if self._data:
            events.append(self._dispatch())
        return events

    def _lines(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")  # a byte-order mark may open the stream
        if self._skip_lf and text:
            self._skip_lf = False
            text = text.removeprefix("\n")  # the LF of a CRLF whose CR ended the last piece
        buffer = self._tail + text if self._tail else text
        events: list[SSEEvent] = []
        start = 0
        for end in _LINE_END.finditer(buffer):
            event = self._line(buffer[start:end.start()])
            if event is not None:
                events.append(event)
            start = end.end()
        self._tail = buffer[start:]
        if start and buffer[start - 1] == "\r":
            self._skip_lf = not self._tail  # a CR at the very end: an LF may follow in the next piece
        if len(self._tail) > MAX_LINE_CHARS:
            raise SSEError(f"an event-stream line longer than {MAX_LINE_CHARS} characters: {self._tail[:200]!r}")
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if self._data:
                return self._dispatch()
            self._event = ""
            return None
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        return None

    def _dispatch(self) -> SSEEvent:
        event = SSEEvent("\n".join(self._data), self._event or "message")
        self._data = []
        self._event = ""
        return event


_OPEN = "<think>"
_CLOSE = "</think>"


def _partial_suffix(text: str, marker: str) -> int:
    """The length of the longest end of `text` that begins `marker` (a marker maybe split between two pieces)."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0


class ThinkFilter:
    """Holds `<think>...</think>` blocks (any case) back from streamed text, so what a reader sees while an answer
    streams is what `strip_think` leaves of the finished one: the same text, except that an answer with a block
    may end in whitespace that the finished `text` has stripped."""

    def __init__(self) -> None:
        self._buffer = ""
        self._inside = False
        self._shown = False
        self._blocks = False
        #: leading whitespace held back until it is known whether the answer has a block (then it is stripped)
        self._lead = ""

    def feed(self, text: str) -> str:
        buffer = self._buffer + text
        out: list[str] = []
        while buffer:
            lower = buffer.lower()
            if self._inside:
                end = lower.find(_CLOSE)
                if end < 0:
                    buffer = buffer[len(buffer) - _partial_suffix(lower, _CLOSE):]
                    break
                buffer = buffer[end + len(_CLOSE):]
                self._inside = False
                continue
            start = lower.find(_OPEN)
            if start >= 0:
                out.append(buffer[:start])
                buffer = buffer[start + len(_OPEN):]
                self._inside = self._blocks = True
                continue
            keep = _partial_suffix(lower, _OPEN)
            out.append(buffer[:len(buffer) - keep])
            buffer = buffer[len(buffer) - keep:]
            break
        self._buffer = buffer
        return self._shown_text("".join(out))

    def flush(self) -> str:
        """What is held back at the end of the answer (a partial `<think` that never became a block, leading
        whitespace of an answer without a block)."""
        rest, self._buffer = ("" if self._inside else self._buffer), ""
        text = self._shown_text(rest)
        if not self._shown and not self._blocks:
            text, self._lead = self._lead, ""
        return text

    def _shown_text(self, text: str) -> str:
        if self._shown:
            return text
        text = self._lead + text
        if not text.strip():
            self._lead = text
            return ""
        self._lead = ""
        self._shown = True
        return text.lstrip() if self._blocks else text
