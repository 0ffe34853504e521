"""What the bench scripts that start a real annotation tool share: its own virtual environment under
~/.cache/tailorbench (never the project's), a free loopback port, and which addresses the started server really
listens on, read from the kernel (/proc/net/tcp, tcp6) rather than
from its flags: Label Studio 1.23.2's `--host` sets only its URL, and a tool's default may be 0.0.0.0.

`check_loopback(pid)` collects the listening TCP sockets of the process and its descendants and fails unless
every one is bound to 127.0.0.1 or ::1. Linux only (the bench scripts run there).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

_LISTEN = "0A"
TOOLS = Path.home() / ".cache" / "tailorbench"
_LOOPBACK = {"127.0.0.1", "::1"}


def _descendants(pid: int) -> list[int]:
    """`pid` and every process below it (a tool may bind in a child: uwsgi, a reloader)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _socket_inodes(pids: list[int]) -> set[str]:
    inodes = set()
    for p in pids:
        try:
            fds = list(Path(f"/proc/{p}/fd").iterdir())
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                link = os.readlink(fd)
            except OSError:  # closed meanwhile (the directory listing's own fd, for one)
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    return inodes


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))  # four little-endian 32-bit words
    text = socket.inet_ntop(socket.AF_INET6, words)
    return text[7:] if text.startswith("::ffff:") else text


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket of `pid` and its descendants."""
    inodes = _socket_inodes(_descendants(pid))
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == _LISTEN and cols[9] in inodes:
                addr, port = cols[1].rsplit(":", 1)
                found.append((_address(addr), int(port, 16)))
    return sorted(set(found))


def check_loopback(pid: int, name: str) -> list[tuple[str, int]]:
    """The listening sockets of `name` (pid and descendants); raises unless there is one and all are loopback."""
    sockets = listening(pid)
    if not sockets:
        raise RuntimeError(f"{name} (pid {pid}) listens on no TCP socket")
    exposed = [s for s in sockets if s[0] not in _LOOPBACK]
    if exposed:
        raise RuntimeError(f"{name} listens beyond loopback: {exposed}")
    return sockets


def ensure_venv(name: str, requirement: str, exe: str) -> Path:
    """The tool's own environment `~/.cache/tailorbench/NAME` (created, and `requirement` installed, on first
    use: a few minutes for Label Studio); the path of its executable `exe`."""
    venv = TOOLS / name
    path = venv / "bin" / exe
    if not path.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", requirement], check=True)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(base: str, proc: subprocess.Popen[bytes], name: str, limit_s: float = 300) -> float:
    """Seconds until `GET base/health` answers 200; raises if the process exits first or time runs out."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode} (see its server log)")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return time.perf_counter() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{name} did not answer /health within {limit_s} s")
