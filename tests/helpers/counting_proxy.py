"""A loopback reverse proxy that counts the requests a real server receives.

Tests assert things like "the second run makes zero chat-completion requests, counted at the server":
that must be measured outside the client under test, so the proxy sits between the client and the real
llama.cpp server and records every request (method, path) before forwarding it.  Responses are relayed
as they arrive (chunked / SSE streaming included), with keep-alive, so the client sees the real server.

An optional ``intercept`` hook lets fault-injection tests answer a request themselves (e.g. 429 with
Retry-After, 500) or drop the connection, instead of forwarding it, or forward it and ``Cut`` the answer's
streamed body after some events (a connection lost mid-stream, or a server error event that ends it).
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from tests.helpers.loopback import LoopbackHTTPServer

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}


@dataclass(frozen=True)
class Reply:
    """A canned answer an ``intercept`` hook returns instead of forwarding."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Cut:
    """Forward the request, relay the first ``events`` server-sent events of the answer's body, then either
    write ``then`` (e.g. an error event) and end the body as a server would, or, without ``then``, relay
    ``tear`` more bytes (a line cut in half) and drop the connection."""

    events: int
    then: bytes = b""
    tear: int = 0


#: where one server-sent event ends (sse-starlette, llama.cpp's Python server, ends lines with CRLF)
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")

DROP = "drop"  # an ``intercept`` hook returns this to close the connection without answering
Intercept = Callable[[str, str, bytes], "Reply | Cut | str | None"]


@dataclass(frozen=True)
class Seen:
    """One request as received by the proxy."""

    method: str
    path: str
    forwarded: bool


class CountingProxy:
    """Forward ``http://127.0.0.1:<port>`` to ``upstream``; count requests per path."""

    def __init__(self, upstream: str, *, intercept: Intercept | None = None, timeout: float = 300.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream_host: str = parts.hostname
        self.upstream_port: int = parts.port
        self.intercept = intercept
        self.timeout = timeout
        self._lock = threading.Lock()
        self._seen: list[Seen] = []
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ public API
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> CountingProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, name="counting-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def count(self, path: str | None = None, *, forwarded_only: bool = False) -> int:
        """Requests received for ``path`` (query ignored; all paths when None)."""
        with self._lock:
            return sum(
                1 for s in self._seen if (path is None or s.path == path) and (s.forwarded or not forwarded_only)
            )

    def counts(self) -> Counter[str]:
        """Requests received, per path."""
        with self._lock:
            return Counter(s.path for s in self._seen)

    @property
    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    def reset(self) -> None:
        with self._lock:
            self._seen.clear()

    # ------------------------------------------------------------------ internals
    def _record(self, method: str, path: str, forwarded: bool) -> None:
        with self._lock:
            self._seen.append(Seen(method, path, forwarded))

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet test output
                return

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                action = proxy.intercept(self.command, path, body) if proxy.intercept else None
                proxy._record(self.command, path, forwarded=action is None or isinstance(action, Cut))
                if action == DROP:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(action, Reply):
                    self.send_response(action.status)
                    for k, v in action.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(action.body)))
                    self.end_headers()
                    self.wfile.write(action.body)
                    return
                self._forward(body, action if isinstance(action, Cut) else None)

            def _drop(self) -> None:
                self.wfile.flush()
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

            def _chunk(self, piece: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()

            def _relay_cut(self, resp: http.client.HTTPResponse, cut: Cut) -> None:
                """The first ``cut.events`` events of a streamed body, then ``cut.then`` or a dropped line."""
                held = b""
                while True:
                    piece = resp.read1(65536)
                    if not piece:
                        break
                    held += piece
                    ends = list(_EVENT_END.finditer(held))
                    if len(ends) >= cut.events:
                        boundary = ends[cut.events - 1].end() if cut.events else 0
                        if cut.then:
                            self._chunk(held[:boundary] + cut.then)
                            self.wfile.write(b"0\r\n\r\n")
                            self.wfile.flush()
                            return
                        self._chunk(held[:boundary + cut.tear])
                        self._drop()
                        return
                self._drop()  # the body ended before the cut: drop anyway (nothing more was relayed)

            def _forward(self, body: bytes, cut: Cut | None = None) -> None:
                conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=proxy.timeout)
                started = False
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                    headers["Host"] = f"{proxy.upstream_host}:{proxy.upstream_port}"
                    if body or self.command in ("POST", "PUT", "PATCH"):
                        headers["Content-Length"] = str(len(body))
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    self.send_response(resp.status, resp.reason)
                    started = True
                    for k, v in resp.getheaders():
                        if k.lower() not in HOP_BY_HOP:
                            self.send_header(k, v)
                    length = resp.getheader("Content-Length")
                    if length is not None:
                        data = resp.read()
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    else:  # streamed (SSE): relay each piece as an HTTP/1.1 chunk
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        if cut is not None:
                            self._relay_cut(resp, cut)
                            return
                        while True:
                            piece = resp.read1(65536)
                            if not piece:
                                break
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (OSError, http.client.HTTPException) as exc:
                    # Upstream failed: report 502 if nothing was sent yet, else drop the line.
                    self.close_connection = True
                    if started:
                        return
                    with contextlib.suppress(OSError):
                        msg = f"counting proxy: upstream error: {exc}".encode()
                        self.send_response(502)
                        self.send_header("Content-Length", str(len(msg)))
                        self.end_headers()
                        self.wfile.write(msg)
                finally:
                    conn.close()

            do_GET = _relay
            do_POST = _relay
            do_PUT = _relay
            do_DELETE = _relay
            do_PATCH = _relay
            do_OPTIONS = _relay
            do_HEAD = _relay

        return Handler
