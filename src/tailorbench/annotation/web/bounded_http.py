"""Requests bounded before any work, at the HTTP layer (uvicorn's httptools protocol, which `tailor annotate
serve` runs): a request head (request line and headers) larger than `MAX_HEAD_BYTES` or with more than
`MAX_HEADERS` headers is answered 431 and the connection closed, without parsing the rest; a head that has not
arrived `HEAD_TIMEOUT_S` seconds after the connection opened or after the previous answer (a slow-header
client) is answered 408 and closed. Measured before: httptools parses any head it is sent, so a 200 MiB header
without a session took 52 s of CPU and stalled every other request (`/healthz` 12 s behind a 128 MiB one).

The head is counted per chunk the socket delivers: the parser has seen at most `MAX_HEAD_BYTES` plus one chunk
(uvloop reads up to 256 KiB at a time) of a head it refuses. Bodies are bounded by the app (`limits.BodyLimit`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

#: the largest request head read (request line and headers; browsers send a few KiB)
MAX_HEAD_BYTES = 64 * 1024
#: the most headers one request may have
MAX_HEADERS = 100
#: seconds a request head may take to arrive
HEAD_TIMEOUT_S = 10.0


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the head limits above (class attributes, so a server can set its own
    by subclassing)."""

    max_head_bytes = MAX_HEAD_BYTES
    max_headers = MAX_HEADERS
    head_timeout_s = HEAD_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._n_headers = 0
        self._in_head = True
        self._refused = False
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _start_head_timer(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self._refuse(408, b"Request Timeout", b"The request did not arrive in time.")

    def _refuse(self, status: int, phrase: bytes, message: bytes) -> None:
        """Answer `status` and close: nothing more of this connection is read or parsed."""
        self._refused = True
        self._stop_head_timer()
        head = b"HTTP/1.1 %d %s\r\n" % (status, phrase)
        for name, value in self.server_state.default_headers:
            head += name + b": " + value + b"\r\n"
        self.transport.write(head + b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
                             b"connection: close\r\n\r\n" % len(message) + message)
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head and self._head_bytes > self.max_head_bytes:
            self._refuse(431, b"Request Header Fields Too Large", b"The request's headers are too large.")
            return
        super().data_received(data)
        if self._refused:
            return
        if self._in_head:  # the head goes on past this chunk: count it
            self._head_bytes += len(data)
            if self._head_bytes > self.max_head_bytes:
                self._refuse(431, b"Request Header Fields Too Large", b"The request's headers are too large.")

    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._n_headers = 0
        super().on_message_begin()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._n_headers += 1
        if self._n_headers <= self.max_headers:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._stop_head_timer()
        if self._n_headers > self.max_headers:
            self._refuse(431, b"Request Header Fields Too Large", b"The request has too many headers.")
            return
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:  # idle until the next head: time it
            self._in_head = True
            self._head_bytes = 0
            self._start_head_timer()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._refused:
            super().on_message_complete()


def server_config(app: Any, host: str, port: int, protocol: type[HttpToolsProtocol] = BoundedHttpToolsProtocol,
                  **options: Any) -> Any:
    """The uvicorn configuration `tailor annotate serve` runs: this protocol, a 5 s keep-alive, no access log."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, http=protocol, timeout_keep_alive=5, log_level="warning",
                          access_log=False, **options)
