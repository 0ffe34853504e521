"""A lean HTTP/1.1 keep-alive transport for the `openai` SDK's httpx client.

Why: httpcore's connection pool scans every connection on every request (O(connections) per request, so
O(n^2) per wave), which costs ~13-25 ms of CPU per call at 64-256 concurrent calls and caps throughput at a
fraction of what the server can do. This transport keeps idle connections in a deque per origin (O(1) per
request) and parses HTTP/1.1 responses with asyncio streams.

Requests are the SDK's own: every request the SDK sends through this transport goes out with the headers
the SDK (and httpx's auth flow) built, and the transport keeps each one's fixed part as a *template*
(`template_for`), so the backend's hot path can send the next call to the same path with exactly those
headers (auth, organization, project, default headers, user agent) without rebuilding them. Only the
per-request headers the SDK varies itself (`x-stainless-retry-count`, `x-stainless-read-timeout`),
`content-length`, `connection` and `accept-encoding` (the hot path asks for gzip/deflate and decodes them) are
left out of a template. tests/models/test_conformance.py compares the bytes with the SDK's default client.

Scope: plain HTTP/1.1 and HTTPS (TLS context from the SDK's httpx, so `SSL_CERT_FILE` / `SSL_CERT_DIR` are
honoured as there), Content-Length or chunked bodies, no proxies (when a proxy variable is set the backend uses
the SDK's own transport). Bodies are read whole, except `text/event-stream` answers and the bodies of
`open_stream`, which are read piece by piece as they arrive (`BodyStream`: a streamed chat answer).
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from types import ModuleType
from typing import Any, NamedTuple, TypeVar


def httpx_module() -> ModuleType:
    """The httpx flavour the installed `openai` SDK is built on (`httpx` or its successor `httpx2`)."""
    import openai

    base = openai.DefaultAsyncHttpxClient.__mro__[1]
    return sys.modules[base.__module__.split(".")[0]]


#: request headers a template leaves out: set per request by the SDK, by the transport, or by the hot path
_PER_REQUEST = frozenset({
    b"content-length", b"transfer-encoding", b"connection", b"accept-encoding", b"x-stainless-retry-count",
    b"x-stainless-read-timeout",
})
#: what the hot path accepts (and decodes itself)
ACCEPT_ENCODING = b"Accept-Encoding: gzip, deflate\r\n"

Origin = tuple[str, str, int]
_T = TypeVar("_T")


async def _within(seconds: float | None, awaitable: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.wait_for` without the task it creates per call before Python 3.12: `asyncio.timeout` (3.11+)
    runs the coroutine in the caller's task. Raises `asyncio.TimeoutError` as wait_for does."""
    if seconds is None:
        return await awaitable
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)


def decode_body(headers: list[tuple[bytes, bytes]], content: bytes) -> bytes:
    """The body with its gzip/deflate content coding removed (the hot path reads bytes, not httpx Responses)."""
    for name, value in headers:
        if name.lower() == b"content-encoding":
            coding = value.strip().lower()
            if coding in (b"gzip", b"x-gzip"):
                return zlib.decompress(content, 16 + zlib.MAX_WBITS)
            if coding == b"deflate":
                try:
                    return zlib.decompress(content)
                except zlib.error:
                    return zlib.decompress(content, -zlib.MAX_WBITS)
            if coding not in (b"", b"identity"):
                raise ValueError(f"unsupported content-encoding {coding.decode('latin-1')!r}")
    return content


class StreamDecoder:
    """Removes a streamed body's gzip/deflate content coding piece by piece (`decode_body` for a whole body)."""

    def __init__(self, headers: list[tuple[bytes, bytes]]) -> None:
        self._inflate: Any = None
        for name, value in headers:
            if name.lower() != b"content-encoding":
                continue
            coding = value.strip().lower()
            if coding in (b"gzip", b"x-gzip"):
                self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            elif coding == b"deflate":
                self._inflate = zlib.decompressobj()
            elif coding not in (b"", b"identity"):
                raise ValueError(f"unsupported content-encoding {coding.decode('latin-1')!r}")

    def decode(self, piece: bytes) -> bytes:
        if self._inflate is None:
            return piece
        try:
            return bytes(self._inflate.decompress(piece))
        except zlib.error as exc:
            raise ValueError(f"the body does not decode: {exc}") from None


class Framing(NamedTuple):
    """How a response's body ends: after `length` bytes, at the last chunk (`chunked`), or when the connection
    closes (neither); `keep`: the connection may carry another request afterwards."""

    length: int | None
    chunked: bool
    keep: bool


class Head(NamedTuple):
    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    framing: Framing


async def read_head(reader: asyncio.StreamReader, method: str) -> Head:
    """A response's status line and headers (1xx interim responses skipped); the body is left in `reader`."""
    while True:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw[:-4].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ValueError(f"bad status line {lines[0][:80]!r}")
        status = int(parts[1])
        if status >= 200 or status == 101:
            break  # skip 1xx interim responses
    reason = parts[2] if len(parts) > 2 else b""
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    keep = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip(), value.strip()
        lower = name.lower()
        if lower == b"content-length":
            length = int(value)
        elif lower == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
            continue  # the body is handed over de-chunked
        elif lower == b"connection":
            token = value.lower()
            keep = b"keep-alive" in token if parts[0] != b"HTTP/1.1" else b"close" not in token
        headers.append((name, value))
    if method == "HEAD" or status in (204, 304):
        length, chunked = 0, False
    elif not chunked and length is None:
        keep = False  # body delimited by connection close
    return Head(status, reason, headers, Framing(length, chunked, keep))


async def read_body(reader: asyncio.StreamReader, framing: Framing) -> bytes:
    """The whole body, de-chunked."""
    if framing.chunked:
        pieces = []
        while True:
            piece = await _next_chunk(reader)
            if not piece:
                break
            pieces.append(piece)
        return b"".join(pieces)
    if framing.length is not None:
        return await reader.readexactly(framing.length)
    return await reader.read()


async def _next_chunk(reader: asyncio.StreamReader) -> bytes:
    """The next chunk of a chunked body; b"" after the last one (its trailers read)."""
    size_line = await reader.readuntil(b"\r\n")
    size = int(size_line.split(b";", 1)[0].strip(), 16)
    if size == 0:
        while (await reader.readuntil(b"\r\n")) != b"\r\n":
            pass  # trailers
        return b""
    piece = await reader.readexactly(size)
    await reader.readexactly(2)
    return piece


#: what a streamed body reads from the socket at most per piece when it is not chunked
_PIECE = 65536


class BodyStream:
    """A response body read piece by piece as it arrives (`async for piece in body`), each read within the read
    timeout. Read to its end, the connection goes back to the pool (`done`); `close()` before the end closes it
    (its state is unknown). Transport failures surface as httpx's exceptions, as a whole-body read's do."""

    def __init__(self, conn: _Conn, framing: Framing, read_timeout: float | None,
                 done: Callable[[_Conn, bool], None], failure: Callable[[_Conn, BaseException], BaseException]
                 ) -> None:
        self._conn: _Conn | None = conn
        self._framing = framing
        self._timeout = read_timeout
        self._done = done
        self._failure = failure
        self._left = framing.length

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces()

    async def _pieces(self) -> AsyncIterator[bytes]:
        while True:
            piece = await self.read_piece()
            if not piece:
                return
            yield piece

    async def read_piece(self) -> bytes:
        """The next piece of the body; b"" at its end."""
        conn = self._conn
        if conn is None:
            return b""
        try:
            piece = await _within(self._timeout, self._read(conn.reader))
        except BaseException as exc:
            self._conn = None
            failure = self._failure(conn, exc)
            if failure is exc:
                raise
            raise failure from exc
        if not piece:
            self._conn = None
            self._done(conn, self._framing.keep)
        return piece

    async def _read(self, reader: asyncio.StreamReader) -> bytes:
        if self._framing.chunked:
            return await _next_chunk(reader)
        if self._left is None:
            return await reader.read(_PIECE)
        if not self._left:
            return b""
        piece = await reader.read(min(self._left, _PIECE))
        if not piece:
            raise asyncio.IncompleteReadError(b"", self._left)
        self._left -= len(piece)
        return piece

    async def read_all(self) -> bytes:
        return b"".join([piece async for piece in self])

    def close(self) -> None:
        """Stop reading: a body not read to its end takes its connection with it."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


def make_transport(max_connections: int = 4096) -> Any:
    """Build the transport class on the SDK's httpx flavour (its base class must match the SDK's client)."""
    httpx = httpx_module()

    class LeanTransport(httpx.AsyncBaseTransport):  # type: ignore[name-defined]
        """O(1) keep-alive pool; every connection error surfaces to the caller (the backend retries and counts)."""

        def __init__(self) -> None:
            self._idle: dict[Origin, deque[_Conn]] = {}
            self._ssl: ssl.SSLContext | None = None
            self._templates: dict[tuple[str, bytes], tuple[Origin, bytes]] = {}
            self.opened = 0

        def template_for(self, method: str, raw_path: bytes) -> tuple[Origin, bytes] | None:
            """(origin, request head) of the last request the SDK sent to `raw_path`, without the per-request
            headers; None when none was sent, or when the SDK marked it as unique (an idempotency key)."""
            return self._templates.get((method.upper(), raw_path))

        async def _connect(self, scheme: str, host: str, port: int, timeout: float | None) -> _Conn:
            ssl_ctx = None
            if scheme == "https":
                if self._ssl is None:
                    self._ssl = httpx.create_ssl_context()  # the SDK's own trust rules (SSL_CERT_FILE ...)
                ssl_ctx = self._ssl
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port, ssl=ssl_ctx, limit=2**20), timeout
                )
            except asyncio.TimeoutError as exc:
                raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out") from exc
            except OSError as exc:
                raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
            self.opened += 1
            return _Conn(reader, writer)

        async def handle_async_request(self, request: Any) -> Any:
            url = request.url
            scheme = url.scheme
            port = url.port or (443 if scheme == "https" else 80)
            key = (scheme, url.host, port)
            timeouts = request.extensions.get("timeout", {})
            body = await request.aread()
            line = f"{request.method} {url.raw_path.decode('ascii')} HTTP/1.1\r\n".encode("ascii")
            head = [line]
            template = [line]
            has_host = False
            unique = False
            for name, value in request.headers.raw:
                lower = name.lower()
                if lower == b"host":
                    has_host = True
                elif lower in (b"transfer-encoding", b"content-length", b"connection"):
                    continue
                elif lower == b"idempotency-key":
                    unique = True
                header = name + b": " + value + b"\r\n"
                head.append(header)
                if lower not in _PER_REQUEST:
                    template.append(header)
            if not has_host:
                head.insert(1, b"Host: " + url.netloc + b"\r\n")
                template.insert(1, b"Host: " + url.netloc + b"\r\n")
            route = (request.method.upper(), url.raw_path)
            if unique:
                self._templates.pop(route, None)
            else:
                self._templates[route] = (key, b"".join(template) + ACCEPT_ENCODING)
            answer, stream = await self.open_stream(
                key, b"".join(head), body, timeouts.get("connect"), timeouts.get("read"), request
            )
            extensions = {"http_version": b"HTTP/1.1", "reason_phrase": answer.reason}
            if _event_stream(answer.headers):  # read as it arrives (the SDK's caller iterates it)
                return httpx.Response(answer.status, headers=answer.headers, stream=_HttpxBody(stream),
                                      request=request, extensions=extensions)
            return httpx.Response(answer.status, headers=answer.headers, content=await stream.read_all(),
                                  request=request, extensions=extensions)

        async def exchange(
            self,
            key: Origin,
            head: bytes,
            body: bytes,
            connect_timeout: float | None,
            read_timeout: float | None,
            request: Any = None,
            conn: _Conn | None = None,
        ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes]:
            """Send one request (`head` without Content-Length and the blank line) on a pooled connection."""
            if conn is None:
                conn = self._checkout(key) or await self._connect(key[0], key[1], key[2], connect_timeout)
            try:
                conn.writer.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
                status, reason, headers, content, keep = await _within(
                    read_timeout, self._read_response(conn.reader, head[: head.index(b" ")].decode())
                )
            except BaseException as exc:
                failure = self._failure(conn, exc, request)
                if failure is exc:
                    raise
                raise failure from exc
            self._give_back(key, conn, keep)
            return status, reason, headers, content

        async def open_stream(
            self,
            key: Origin,
            head: bytes,
            body: bytes,
            connect_timeout: float | None,
            read_timeout: float | None,
            request: Any = None,
        ) -> tuple[Head, BodyStream]:
            """Send one request as `exchange` does, but read only the response's head: the body is read piece by
            piece from the `BodyStream` (each read within `read_timeout`), which hands the connection back."""
            conn = self._checkout(key) or await self._connect(key[0], key[1], key[2], connect_timeout)
            try:
                conn.writer.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
                answer = await _within(read_timeout, read_head(conn.reader, head[: head.index(b" ")].decode()))
            except BaseException as exc:
                failure = self._failure(conn, exc, request)
                if failure is exc:
                    raise
                raise failure from exc
            return answer, BodyStream(conn, answer.framing, read_timeout,
                                      lambda done, keep: self._give_back(key, done, keep),
                                      lambda failed, exc: self._failure(failed, exc, request))

        def _checkout(self, key: Origin) -> _Conn | None:
            """An idle connection to `key` that is still usable, or None."""
            idle = self._idle.get(key)
            while idle:
                candidate = idle.pop()
                if candidate.usable():
                    return candidate
                candidate.close()
            return None

        def _give_back(self, key: Origin, conn: _Conn, keep: bool) -> None:
            """A connection whose response was read to its end: into the pool, or closed."""
            if keep:
                pool = self._idle.setdefault(key, deque())
                pool.append(conn)
                if len(pool) > max_connections:
                    pool.popleft().close()
            else:
                conn.close()

        @staticmethod
        def _failure(conn: _Conn, exc: BaseException, request: Any) -> BaseException:
            """The connection closed, and what its failure is raised as: httpx's exception for a timeout or a
            broken response, the exception itself otherwise (a cancellation mid-response: state unknown)."""
            conn.close()
            if isinstance(exc, asyncio.TimeoutError):
                return httpx.ReadTimeout("timed out waiting for the response", request=request)
            if isinstance(exc, (OSError, asyncio.IncompleteReadError, ValueError)):
                return httpx.RemoteProtocolError(f"connection dropped: {type(exc).__name__}: {exc}", request=request)
            return exc

        @staticmethod
        async def _read_response(
            reader: asyncio.StreamReader, method: str
        ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes, bool]:
            status, reason, headers, framing = await read_head(reader, method)
            return status, reason, headers, await read_body(reader, framing), framing.keep

        async def aclose(self) -> None:
            for pool in self._idle.values():
                while pool:
                    pool.pop().close()
            self._idle.clear()

    class _HttpxBody(httpx.AsyncByteStream):  # type: ignore[name-defined]
        """A `BodyStream` as an httpx response stream."""

        def __init__(self, body: BodyStream) -> None:
            self._body = body

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for piece in self._body:
                yield piece

        async def aclose(self) -> None:
            self._body.close()

    return LeanTransport()


def _event_stream(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"content-type" and value.lower().startswith(b"text/event-stream")
               for name, value in headers)
