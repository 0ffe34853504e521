"""The `Output` of the one door (the `files` package): the only way a verb writes, replaces and removes under
an output it claimed (`claim_output`, `as_output`): names checked to stay inside it, the folder made on the first
write with its marker, every file written atomically, library savers given a staged folder swapped into place."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from tailorbench.errors import ConfigError
from tailorbench.files.atomic import (
    MARKER,
    appending,
    remove_if_unused,
    replace_into,
    replacing,
    swap_in,
    write_json_atomic,
    write_jsonl_atomic,
    write_marker,
    write_text_atomic,
)
from tailorbench.files.claim import check_output
from tailorbench.files.reading import load_bytes


class Output:
    """An output that passed the output rule (`claim_output`): the one way to write, replace and remove under it.

    A directory output is created on the first write (so nothing exists before the inputs validate), with
    `MARKER`; every name given to a method is checked to stay inside it. A file output (`directory` False) is
    written with the same atomic replace. `made` tells whether this command created the folder, so a refused
    run can take away what it made (`discard_if_unused`)."""

    def __init__(self, flag: str, root: Path, directory: bool, made_by: str = "tailor") -> None:
        self.flag = flag
        self.root = root
        self.directory = directory
        self.made_by = made_by
        self.existed = root.exists()

    def __fspath__(self) -> str:
        return str(self.root)

    def __repr__(self) -> str:
        return f"Output({self.flag} {self.root})"

    def path(self, *parts: str | Path) -> Path:
        """A path inside the output (`parts` relative, no `..`): for reading back and for a library saver given
        a staged folder (`staged`)."""
        if not self.directory:
            if parts:
                raise ValueError(f"{self.flag} {self.root} is a file output: it has no names inside")
            return self.root
        inner = Path(*parts) if parts else Path()
        if inner.is_absolute() or ".." in inner.parts:
            raise ConfigError(f"{self.flag}: {inner} would leave {self.root}; names inside an output are relative")
        return self.root / inner

    def ensure(self, *parts: str | Path) -> Path:
        """The output folder (or a folder inside it) created now, with the marker in the output folder itself."""
        if not self.directory:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            return self.root
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{self.flag} {self.root} cannot be created: {exc.strerror or exc}") from None
        marker = self.root / MARKER
        if not marker.exists():
            replace_into(marker, lambda handle: handle.write(json.dumps({"made_by": self.made_by}) + "\n"))
        target = self.path(*parts)
        target.mkdir(parents=True, exist_ok=True)
        return target

    def _file(self, name: str | Path | None) -> Path:
        if name is None:
            if self.directory:
                raise ValueError(f"{self.flag} {self.root} is a directory output: name a file inside it")
            self.ensure()
            return self.root
        target = self.path(name)
        self.ensure(*Path(name).parts[:-1])
        return target

    def write_text(self, name: str | Path | None, text: str) -> Path:
        return write_text_atomic(self._file(name), text)

    def write_bytes(self, name: str | Path | None, data: bytes) -> Path:
        target = self._file(name)
        replace_into(target, lambda handle: handle.buffer.write(data))
        return target

    def write_json(self, name: str | Path | None, payload: Any) -> Path:
        return write_json_atomic(self._file(name), payload)

    def write_jsonl(self, name: str | Path | None, rows: Iterable[dict[str, Any] | str]) -> int:
        return write_jsonl_atomic(self._file(name), rows)

    @contextlib.contextmanager
    def writing(self, name: str | Path | None) -> Iterator[IO[str]]:
        """A text handle whose whole content replaces `name` when the block ends without an error (for a writer
        that streams: csv.writer, yaml.safe_dump; what it writes is built from records redacted at the source)."""
        target = self._file(name)
        with replacing(target) as handle:
            yield handle

    @contextlib.contextmanager
    def appending(self, name: str | Path | None) -> Iterator[IO[bytes]]:
        """A binary append handle on `name` (a run's predictions: one flushed line per verdict)."""
        with appending(self._file(name)) as handle:
            yield handle

    def copy_in(self, source: str | Path, name: str | Path) -> Path:
        """A copy of the file `source` (never inside this output's own state) as `name`, atomically."""
        data = load_bytes(Path(source), "a file to copy")
        return self.write_bytes(name, data)

    def remove(self, name: str | Path) -> None:
        """Remove the file or folder `name` inside the output (absent: nothing to do)."""
        target = self.path(name)
        if target == self.root:
            raise ValueError("an output removes names inside it, never itself")
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)

    @contextlib.contextmanager
    def staged(self, name: str | Path | None = None) -> Iterator[Path]:
        """A fresh folder to fill (by a library saver: `save_pretrained`, `np.savez`, a copied tree) that replaces
        the folder `name` inside the output (or the whole output, `name` None, the marker kept) only when the
        block ends without an error; on an error it is removed and the old folder stays as it was."""
        target = self.path(name) if name is not None else self.root
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        try:
            yield tmp
            if name is None:
                write_marker(tmp, self.made_by)
            swap_in(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def discard_if_unused(self, leftovers: Sequence[str] = ("run.lock",)) -> None:
        """After a refused run: the folder this command created, holding nothing but `leftovers`, the marker and
        empty files, is removed, so a refused command leaves nothing behind."""
        remove_if_unused(self.root, self.existed, (*leftovers, MARKER))


def claim_output(flag: str, path: str | Path, *, made_by: str = "tailor", **rule: Any) -> Output:
    """`check_output(flag, path, **rule)` and the `Output` through which the verb writes there."""
    target = check_output(flag, path, **rule)
    return Output(flag, target, bool(rule.get("directory")), made_by)


def as_output(where: Output | str | Path, flag: str = "--out", *, name: str | None = None, **rule: Any) -> Output:
    """The Output of a function that writes where its caller says, whether the caller hands it an `Output` it
    claimed at its verb's entry (the rule was checked there, and the folder may already hold that verb's own
    files, even its inputs: `tailor stages example` reads back the votes it wrote) or a path (claimed now:
    `claim_output(flag, where, **rule)`). With `name`, the one file of that name in the folder `where` (a saver of
    a checkpoint's part): inside a folder Output (made now, with its marker) or, for a path, that file alone
    claimed, so a checkpoint folder someone else made gets one file and no marker."""
    if isinstance(where, Output):
        if name is None:
            return where
        target = where.path(name)
        where.ensure(*Path(name).parts[:-1])
        return Output(where.flag, target, False, where.made_by)
    return claim_output(flag, Path(where) / name if name is not None else where, **rule)
