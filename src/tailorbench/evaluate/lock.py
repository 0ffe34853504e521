"""The lock of a run directory: a process that writes a run holds `run.lock` (`flock`) for as long as it lives.

Why: a manifest says `running` both while a process works and after that process was killed (kill -9, a
crash, a lost machine). The kernel drops an flock with its process, so "running and the lock is free" means
interrupted, and a second process can never append to predictions another one is writing. The file stays in
the directory (removing a lock file races with the next taker); it holds the pid of the last holder.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from tailorbench.errors import ConfigError

LOCK = "run.lock"


class RunInProgressError(ConfigError):
    """Another live process holds the run directory's lock (exit code 2)."""


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "another process"
    return f"process {pid}" if pid.isdigit() else "another process"


class RunLock:
    """An exclusive, non-blocking flock on `<run_dir>/run.lock`, held until `release` (or process exit)."""

    def __init__(self, run_dir: Path, record: bool = True) -> None:
        """`record=False`: the pid is written only when `record()` is called: a run that may still be refused
        takes the lock to check its directory, and a refused run leaves the file as the last real holder wrote
        it."""
        self.path = Path(run_dir) / LOCK
        self._fd: int | None = None
        self._record_on_acquire = record

    def acquire(self) -> RunLock:
        """Take the lock or raise RunInProgressError naming the holder; records this process's pid (unless
        the lock was made with `record=False`)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:  # a directory, a dangling link, no permission: named, never a traceback
            raise ConfigError(f"{self.path}: cannot be used as the run's lock file ({exc.strerror or exc}); "
                              "it is not a file this run can lock: remove or rename it") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunInProgressError(
                f"{self.path.parent}: run is in progress ({_holder(self.path)} holds {self.path}); "
                "wait for it to finish or stop it first") from None
        self._fd = fd
        if self._record_on_acquire:
            self.record()
        return self

    def record(self) -> None:
        """Write this process's pid into the lock file (it holds the lock)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"{os.getpid()}\n".encode("ascii"), 0)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def is_locked(run_dir: Path) -> bool:
    """True while a live process (this one included) holds the run directory's lock."""
    path = Path(run_dir) / LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own shared lock
    return False


def run_state(run_dir: Path, status: str | None) -> str:
    """The status to report: a manifest saying `running` whose lock no process holds was interrupted."""
    if status == "running" and not is_locked(run_dir):
        return "interrupted"
    return status or "unknown"
