"""The atomic writes and removals under the one door (the `files` package): every file goes to a unique temporary
sibling first and is renamed into place, with the permissions the user's umask gives and the process's registered
secrets masked; a claimed output folder gets its marker (`MARKER`) with its first file; append handles for the
files a run grows line by line; removals of the command's own files and scratch folders."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from tailorbench.errors import ConfigError
from tailorbench.redact import redact_registered

#: the file a verb puts in every directory it creates, so that a later run knows the folder as its own (and a
#: folder without it, holding files, as someone else's: refused without --force)
MARKER = ".tailorbench"


def _read_umask() -> int:
    """The process's umask (read once: os.umask can only be read by setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()

#: directories this process claimed as outputs (`check_output(directory=True)`): the first file the door writes
#: under one of them marks it (`MARKER`), so a verb's folder is its own on the next run however it was created
CLAIMED: set[Path] = set()


def is_under(path: Path, folder: Path) -> bool:
    """`path` is `folder` or lies inside it."""
    return path == folder or folder in path.parents


def mark_claimed(folder: Path) -> None:
    """Mark every claimed output at or above `folder` that has no marker yet."""
    if not CLAIMED:
        return
    resolved = resolve_path(folder)
    for claimed in CLAIMED:
        if is_under(resolved, claimed) and claimed.is_dir() and not (claimed / MARKER).exists():
            write_marker(claimed, "tailor")


def is_ours(folder: Path) -> bool:
    """A directory a tailorbench verb created (it holds `MARKER`)."""
    return (Path(folder) / MARKER).is_file()


def resolve_path(path: Path) -> Path:
    """`path` resolved (a symlink loop: as written, absolute)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare it as written
        return path.absolute()


def write_marker(folder: Path, made_by: str) -> None:
    replace_into(folder / MARKER, lambda handle: handle.write(json.dumps({"made_by": made_by}) + "\n"))


def swap_in(tmp: Path, target: Path) -> None:
    """Put the folder `tmp` where `target` is: the old one renamed aside first, removed after the rename."""
    old: Path | None = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _chmod_umask(path: Path) -> None:
    """A new file gets the permissions the user's umask gives (mkstemp makes 0600 whatever the umask)."""
    with contextlib.suppress(OSError):
        os.chmod(path, 0o666 & ~_UMASK)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[IO[str]]:
    """A handle on a unique temporary sibling of `path`, renamed over it when the block ends (removed on error)."""
    if path.is_dir() and not path.is_symlink():
        # a folder where the command writes a file (a hand-made results.json/, summary.html/): never replaced
        raise ConfigError(f"{path} is a directory where this command writes a file: remove or rename it")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name != MARKER:
        mark_claimed(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
        _chmod_umask(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def replace_into(path: Path, write: Callable[[Any], None]) -> None:
    """`write(handle)` into a unique temporary sibling of `path`, renamed over it (removed on failure)."""
    with replacing(path) as handle:
        write(handle)


def write_text_atomic(path: str | Path, text: str) -> Path:
    path = Path(path)
    replace_into(path, lambda handle: handle.write(redact_registered(text)))
    return path


def write_json_atomic(path: str | Path, payload: Any) -> Path:
    """Pretty JSON, UTF-8 unescaped (Chinese stays readable)."""
    return write_text_atomic(path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


def write_jsonl_atomic(path: str | Path, rows: Iterable[dict[str, Any] | str]) -> int:
    """One JSON object per line (dicts are serialised, strings are taken as already-serialised lines);
    returns the number of lines."""
    count = 0

    def write(handle: Any) -> None:
        nonlocal count
        for row in rows:
            line = row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)
            handle.write(redact_registered(line) + "\n")
            count += 1

    replace_into(Path(path), write)
    return count


def remove_if_unused(folder: Path, existed: bool, leftovers: Sequence[str] = ("run.lock",)) -> None:
    """After a rejected run: a folder the run created (`existed` False) that holds nothing but `leftovers` (its
    lock, the manifest it began with), the marker and empty files is removed, so a refused command leaves nothing
    behind."""
    if existed or not folder.is_dir():
        return
    entries = list(folder.iterdir())
    keep = (*leftovers, MARKER)
    if all(e.is_file() and (e.name in keep or e.stat().st_size == 0) for e in entries):
        for entry in entries:
            entry.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # something appeared meanwhile: keep it
            folder.rmdir()


@contextlib.contextmanager
def appending(path: str | Path) -> Iterator[IO[bytes]]:
    """A binary append handle on a file a run owns and grows line by line (predictions.jsonl, verdicts.jsonl,
    generations.jsonl, a training log), inside an output the run claimed; a new file gets the umask's mode."""
    target = Path(path)
    existed = target.exists()
    if not existed:
        mark_claimed(target.parent)
    with target.open("ab") as handle:
        if not existed:
            _chmod_umask(target)
        yield handle


def cut_torn_line(path: str | Path, end: int) -> None:
    """Cut a file a run appends to at `end` (just after its last newline): the torn line a killed process left
    is dropped before the next process appends, so no line is glued to half of another."""
    with Path(path).open("r+b") as handle:
        handle.truncate(end)


def remove_path(path: str | Path) -> None:
    """Remove a file (or an empty folder) the command itself owns and names: its lock, a scratch file, a cache
    entry. Never a user's output: those go through `Output.remove`."""
    target = Path(path)
    if target.is_dir() and not target.is_symlink():
        target.rmdir()
    else:
        target.unlink(missing_ok=True)


def remove_tree(path: str | Path) -> None:
    """Remove a scratch folder the command made itself (a temporary working folder, a step's unfinished output).
    Refuses a folder without the marker that is not a temporary one (`.…tmp`, or under the system's temporary
    directory), so a wrong path can never take a user's folder with it."""
    target = Path(path)
    if not target.exists():
        return
    tmpdir = resolve_path(Path(tempfile.gettempdir()))
    resolved = resolve_path(target)
    scratch = target.name.endswith(".tmp") or target.name.startswith(".") or is_under(resolved, tmpdir)
    if not (scratch or is_ours(target)):
        raise ValueError(f"refusing to remove {target}: not a folder this command made")
    shutil.rmtree(target, ignore_errors=True)


@contextlib.contextmanager
def scratch(prefix: str = "tailorbench-", parent: str | Path | None = None) -> Iterator[Path]:
    """A temporary folder the command works in (an upload being imported, an export being served, a step being
    built), removed when the block ends whatever happens; under `parent` (on the output's file system, so a
    finished folder can be renamed into place) or the system's temporary directory."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def make_scratch(prefix: str = "tailorbench-", parent: str | Path | None = None) -> Path:
    """A temporary folder whose removal the caller schedules itself (`remove_tree`), for work that outlives one
    block (a file served by a web response and removed after it is sent)."""
    return Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=parent))
