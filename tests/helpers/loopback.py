"""The life cycle every test HTTP server here shares: a `ThreadingHTTPServer` on 127.0.0.1 in a daemon thread,
stopped by `.stop()` or at the end of a `with` block; and the guard (`guard_listen`, installed for the whole
suite by tests/conftest.py) that makes any socket the test process listens on beyond loopback an error."""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any, TypeVar

S = TypeVar("S", bound="LoopbackServer")


class LoopbackHTTPServer(ThreadingHTTPServer):
    """The stdlib's threading server with a listen backlog of 128 instead of socketserver's 5: a run sending a
    dozen calls at once to a server whose accept thread waits for a CPU overflowed 5, and the refused connection
    came back as a failed call (a 502 through the proxies) in a full-suite run on two workers (2026-12-06)."""

    request_queue_size = 128
    daemon_threads = True
    #: requests whose client hung up before the request line was read (counted, not printed)
    client_resets = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (tests cut connections on purpose: a killed run, a cancelled call) is counted
        in `client_resets`; any other error is printed with its traceback, as the stdlib does."""
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            self.client_resets += 1
            return
        super().handle_error(request, client_address)


def bind(port: int, handler: Any, wait_s: float = 10.0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:`port`; a port a restarted server takes back may still be held by the old server's
    connections for a moment, so EADDRINUSE is retried for up to `wait_s` (port 0: any free port, once)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return LoopbackHTTPServer(("127.0.0.1", port), handler)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or port == 0 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class LoopbackServer:
    """Mixin: subclasses define `start()` (which calls `_serve`) and keep the server in `_server`."""

    _server: ThreadingHTTPServer | None

    def start(self: S) -> S:
        raise NotImplementedError

    def _serve(self, server: ThreadingHTTPServer) -> None:
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


_LOOPBACK_HOSTS = frozenset({"::1", "::ffff:127.0.0.1"})


def is_loopback(host: str) -> bool:
    return host.startswith("127.") or host in _LOOPBACK_HOSTS


def guard_listen() -> Callable[[], None]:
    """Make every socket this test process listens on prove it is on loopback: `listen()` on any other address
    raises, naming it (in-process servers: uvicorn, http.server, asyncio). Returns the undo."""
    original = socket.socket.listen

    def listen(self: socket.socket, *args: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host, port = self.getsockname()[:2]
            if not is_loopback(host):
                raise OSError(f"a test server would listen on {host}:{port}; every server a test starts binds "
                              "127.0.0.1 only")
        original(self, *args)

    socket.socket.listen = listen  # type: ignore[method-assign,assignment]

    def undo() -> None:
        socket.socket.listen = original  # type: ignore[method-assign]

    return undo
