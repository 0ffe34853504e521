"""A network namespace with loopback alone, for the parts that bind beyond it whatever they are told: Ray 2.60
binds its GCS, raylets and workers on `::` and the machine's address even with `--node-ip-address=127.0.0.1`
(measured: 10 listening sockets, none on loopback). Inside `unshare -n` the only interface is `lo`, so every
socket they open is reachable from this machine's loopback namespace only (measured: all 10 on 127.0.0.1).

`prefix()` is the command prefix that runs a command there (None where unshare is not permitted: not root, no
user namespaces); `inside()` tells a process it already runs there."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

#: set in the environment of a command run under `prefix()`
ENV_FLAG = "TAILORBENCH_LOOPBACK_NETNS"


@functools.cache
def prefix() -> tuple[str, ...] | None:
    """`unshare -n` with `lo` brought up, then the command; None where that cannot run here."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        return None
    cmd = (unshare, "-n", "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh")
    try:
        ok = subprocess.run([*cmd, "true"], capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cmd if ok else None


def inside() -> bool:
    return os.environ.get(ENV_FLAG) == "1"
