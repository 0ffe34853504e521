"""Requests bounded before any work (issue 33, point 2), against the real server as `tailor annotate serve`
runs it (uvicorn with web/bounded_http.py's protocol, on loopback, raw sockets): a request head over the limit
is a 431 and the connection closes without the rest being read; too many headers is a 431; a head that trickles
in slower than the head timeout is a 408; an upload without a session is answered 401 and the connection
closed before the body is sent (before the fix uvicorn read all of it); ordinary requests still work."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from tailorbench.annotation.db import Database
from tailorbench.annotation.web import create_app
from tailorbench.annotation.web.bounded_http import BoundedHttpToolsProtocol, server_config
from tests.annotation.conftest import free_port


class QuickHead(BoundedHttpToolsProtocol):
    """The served protocol with a head timeout short enough for a test."""

    head_timeout_s = 1.0


@pytest.fixture
def port(db: Database) -> Iterator[int]:
    number = free_port()
    server = uvicorn.Server(server_config(create_app(db), "127.0.0.1", number, QuickHead, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield number
    server.should_exit = True
    thread.join(10)


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=20)


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset after its answer counts as closed)."""
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    return got


def _send_all(sock: socket.socket, data: bytes, piece: int = 64 * 1024) -> int:
    """Send `data` in pieces until the server stops taking it; the bytes it took."""
    sent = 0
    try:
        while sent < len(data):
            sent += sock.send(data[sent:sent + piece])
    except (BrokenPipeError, ConnectionResetError):
        pass
    return sent


def _healthz(port: int) -> bytes:
    with _connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return _answer(sock)


def test_a_huge_header_is_refused_unread(port: int) -> None:
    """A 2 MiB header without a session: 431 once the head passes 64 KiB, and the server closes while most of
    it is still unsent (before: httptools parsed all of it, 52 s of CPU for 200 MiB)."""
    with _connect(port) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
        head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (2 << 20) + b"\r\n\r\n"
        sent = _send_all(sock, head)
        answer = _answer(sock)
    assert sent < len(head) // 2 or answer.startswith(b"HTTP/1.1 431"), (sent, answer[:100])
    assert _healthz(port).startswith(b"HTTP/1.1 200")


def test_a_head_over_the_limit_gets_431(port: int) -> None:
    with _connect(port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (100 * 1024))
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 431") and b"connection: close" in answer.lower()


def test_too_many_headers_get_431(port: int) -> None:
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    with _connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + many + b"\r\n")
        assert _answer(sock).startswith(b"HTTP/1.1 431")


def test_a_slow_head_times_out(port: int) -> None:
    """A slow-header client (a byte now and then, the head never complete) is answered 408 and closed once the
    head timeout (1 s here, 10 s served) has passed, whatever it still sends."""
    with _connect(port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        answer = b""
        for _ in range(40):  # up to 4 s of trickling
            try:
                sock.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                break
            sock.settimeout(0.1)
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except ConnectionResetError:
                break
            answer += chunk
            if not chunk or answer.startswith(b"HTTP/1.1 408"):
                break
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]


def test_an_unauthenticated_upload_is_answered_before_its_body(port: int) -> None:
    """A 64 MiB chunked import without a session: the 401 comes with Connection: close after the head alone,
    and the server closes the connection: the body is never read (before: answered once all of it was sent)."""
    with _connect(port) as sock:
        sock.sendall(b"POST /admin/p/1/import HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n")
        answer = _answer(sock)  # nothing of the body sent yet
        head = answer.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 401") and b"connection: close" in head
        sent = _send_all(sock, b"10000\r\n" + b"z" * 0x10000 + b"\r\n" * 1024)  # the server is gone
    assert sent < 64 << 20


def test_ordinary_requests_and_keep_alive_still_work(port: int) -> None:
    with _connect(port) as sock:
        for _ in range(3):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n")
            got = sock.recv(65536)
            assert got.startswith(b"HTTP/1.1 200"), got[:100]


