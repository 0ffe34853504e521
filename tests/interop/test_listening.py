"""The check the bench scripts run on every server they start (bench/listening.py): the listening sockets of a
process and its children, read from /proc, all on loopback. Checked here on servers this process starts."""

from __future__ import annotations

import os
import socket
import sys

import pytest
from bench.listening import check_loopback, listening

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


def test_a_server_on_all_interfaces_fails_the_check() -> None:
    with _listen("127.0.0.1"), _listen("0.0.0.0") as wide:
        port = wide.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"beyond loopback: .*'0.0.0.0', {port}"):
            check_loopback(os.getpid(), "this test")


def test_ipv6_loopback_is_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        s = _listen("::1", socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with s:
        assert ("::1", s.getsockname()[1]) in listening(os.getpid())
