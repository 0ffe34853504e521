"""The check the perf scripts and the test fixtures run on every server they start (perf/listening.py): the
listening sockets of a process and its children, read from /proc, all on loopback; and the suite's guard that
no socket of the test process listens beyond loopback."""

from __future__ import annotations

import os
import socket
import sys

import pytest
from perf.listening import check_loopback, listening

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _listen(host: str, family: socket.AddressFamily = socket.AF_INET) -> socket.socket:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, 0))
    s.listen()
    return s


def test_a_loopback_server_passes_and_its_port_is_seen() -> None:
    with _listen("127.0.0.1") as s:
        port = s.getsockname()[1]
        assert ("127.0.0.1", port) in listening(os.getpid())
        assert ("127.0.0.1", port) in check_loopback(os.getpid(), "this test")


def test_a_server_on_all_interfaces_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read from a socket table that shows one (no test listens beyond loopback, even to prove this)."""
    import perf.listening as module

    monkeypatch.setattr(module, "listening", lambda pid: [("0.0.0.0", 8123), ("127.0.0.1", 8124)])
    with pytest.raises(RuntimeError, match=r"beyond loopback: \[\('0.0.0.0', 8123\)\]"):
        check_loopback(os.getpid(), "this test")
    monkeypatch.setattr(module, "listening", lambda pid: [])
    with pytest.raises(RuntimeError, match="listens on no TCP socket"):
        check_loopback(os.getpid(), "this test")


def test_the_suite_refuses_to_listen_beyond_loopback() -> None:
    """tests/conftest.py's guard: a socket bound to every interface cannot start listening in this suite."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        with pytest.raises(OSError, match=r"would listen on 0\.0\.0\.0:\d+; every server a test starts binds"):
            s.listen()


def test_ipv6_loopback_is_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        s = _listen("::1", socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with s:
        assert ("::1", s.getsockname()[1]) in listening(os.getpid())
