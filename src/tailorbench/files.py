"""The ground rules for the files tailorbench touches.

Writing (the one door of every verb): every write, replacement and removal of a user-visible path goes through
this module, and a standing test (tests/test_one_door.py, an AST walk over the package) fails on any other.
An output is claimed before any work and without creating anything (`claim_output`, `check_output`): it is not
one of the command's inputs, nor a folder holding one, nor the command's own state (a study folder, an
annotation database); it lies inside the folder the user named when a config names it (`within`); a non-empty
directory the command did not create (`MARKER`) is refused unless `--force` was given on the command line.
The `Output` it returns is the only way to write under it: names are checked to stay inside it, every file goes
to a unique temporary sibling first and is renamed into place (`write_text_atomic`), so an interrupted or failed
run never leaves half a file where a good one was, with the permissions the user's umask gives; every text
written has the process's registered secrets masked (`redact.py`), a last guard behind redaction at the
sources.

Reading (the one reader of user files: `load_json`, `load_yaml`, `parse_json`, `read_csv`, and
datasets/rows.py's `read_jsonl` for JSONL; tests/test_one_reader.py fails on any other YAML, JSON or CSV parse
of a file): a file read whole is bounded in size (`MAX_FILE_BYTES`, checked before reading), nesting is bounded
(`MAX_NESTING`) so a file 100,000 levels deep is an error message, never a RecursionError; YAML has no anchors,
aliases or repeated keys; CSV fields are bounded (`MAX_CSV_FIELD`) and text is UTF-8; the top level's type is
checked; every error is a DataError naming the file, the line and the field (docs/data.md, "Reading files").
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from tailorbench.errors import ConfigError, DataError, shown
from tailorbench.redact import redact_registered

#: the deepest nesting of objects and lists a user file may have (exports and configs are a few levels deep)
MAX_NESTING = 64


# --- writing ------------------------------------------------------------------------------------------------

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
_CLAIMED: set[Path] = set()


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_output(flag: str, path: str | Path, *, inputs: Iterable[str | Path | None] = (), directory: bool = False,
                 ours: Callable[[Path], bool] | None = None, force: bool = False, hint: str = "",
                 state: Iterable[str | Path | None] = (), within: str | Path | None = None) -> Path:
    """The output rule, checked before any work and without creating anything. `path` (named by `flag`) must
    not be one of the command's `inputs`, a file inside an input folder or a folder holding an input (a
    ConfigError naming both); never the command's own `state` (a study folder, an annotation database), a folder
    holding it or a path inside it (`force` changes nothing here); inside `within` when given (an output a config
    file names lies inside the folder of that config's owner). An existing file must be writable (and not a
    directory, unless `directory`); else the nearest existing ancestor must be a writable directory. An existing
    non-empty `directory` is refused unless the command made it (`MARKER`, or `ours(path)`: the verb's own
    earlier output) or `force` is given: its files are not the verb's to replace (`hint`: what else the user can
    do, e.g. "or --force to write into it anyway"; an output named in a config file passes no force). Returns
    the path."""
    target = Path(path).expanduser()
    resolved = _resolved(target)
    if within is not None:
        folder = _resolved(Path(within).expanduser())
        if not _under(resolved, folder) or resolved == folder:
            raise ConfigError(f"{flag} {target} lies outside {within}: an output named here must be a folder "
                              f"or file inside it (a relative path)")
    for owned in state:
        if owned is None:
            continue
        kept = _resolved(Path(owned).expanduser())
        if _under(kept, resolved):
            raise ConfigError(f"{flag} {target} {'is' if kept == resolved else 'holds'} this command's own state "
                              f"{owned}: writing there would replace it; name a path inside it or elsewhere")
        if resolved != kept and _under(resolved, kept) and not kept.is_dir():
            raise ConfigError(f"{flag} {target} is inside this command's own state {owned}")
    for source in inputs:
        if source is None:
            continue
        given = _resolved(Path(source).expanduser())
        if given == resolved or (given.is_dir() and target.is_file() and given in resolved.parents):
            raise ConfigError(f"{flag} {target} is {'also' if given == resolved else 'a file inside'} this "
                              f"command's input {source}: the output would overwrite it; write to another path")
        if directory and resolved in given.parents and not is_ours(target):
            raise ConfigError(f"{flag} {target} holds this command's input {source}: the output would replace "
                              f"files beside it; write to another path")
    if target.exists():
        if target.is_dir() != directory:
            raise ConfigError(f"{flag} {target} is {'a file' if directory else 'a directory'}, "
                              f"expected {'a directory' if directory else 'a file'}")
        if not directory:
            try:
                with target.open("ab"):
                    pass
            except OSError as exc:
                raise ConfigError(f"{flag} {target} cannot be written: {exc.strerror or exc}") from None
            return target
        try:
            holds = any(target.iterdir())
        except OSError as exc:
            raise ConfigError(f"{flag} {target} cannot be read: {exc.strerror or exc}") from None
        if not force and holds and not is_ours(target) and not (ours is not None and ours(target)):
            raise ConfigError(f"{flag} {target} is a directory that already holds files this command did not "
                              f"write: give a new or empty directory{hint}")
    probe = target if target.exists() else target.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{flag} {target} cannot be created: {probe} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {target} cannot be written: {probe}: {exc.strerror or exc}") from None
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {target} cannot be written: {probe} is not writable")
    if directory:
        _CLAIMED.add(resolved)
    return target


def ensure_dir(path: str | Path) -> Path:
    """Create a folder the command writes into (an output it claimed, or a folder inside one), marking a
    claimed output as the command's own."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    _mark_claimed(folder)
    return folder


def _mark_claimed(folder: Path) -> None:
    """Mark every claimed output at or above `folder` that has no marker yet."""
    if not _CLAIMED:
        return
    resolved = _resolved(folder)
    for claimed in _CLAIMED:
        if _under(resolved, claimed) and claimed.is_dir() and not (claimed / MARKER).exists():
            _write_marker(claimed, "tailor")


def is_ours(folder: Path) -> bool:
    """A directory a tailorbench verb created (it holds `MARKER`)."""
    return (Path(folder) / MARKER).is_file()


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare it as written
        return path.absolute()


def only_names(patterns: Sequence[str], required: str) -> Callable[[Path], bool]:
    """An `ours` test of `check_output`: a directory holding `required` and nothing but files matching
    `patterns` (glob patterns of the names the verb writes; the marker aside) is the verb's earlier output."""

    def test(folder: Path) -> bool:
        entries = [e for e in folder.iterdir() if e.name != MARKER]
        return (folder / required).is_file() and all(
            entry.is_file() and any(entry.match(p) for p in patterns) for entry in entries)

    return test


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
            _replace_into(marker, lambda handle: handle.write(json.dumps({"made_by": self.made_by}) + "\n"))
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
        _replace_into(target, lambda handle: handle.buffer.write(data))
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
        with _replacing(target) as handle:
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
                _write_marker(tmp, self.made_by)
            _swap_in(tmp, target)
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


def _write_marker(folder: Path, made_by: str) -> None:
    _replace_into(folder / MARKER, lambda handle: handle.write(json.dumps({"made_by": made_by}) + "\n"))


def _swap_in(tmp: Path, target: Path) -> None:
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
def _replacing(path: Path) -> Iterator[IO[str]]:
    """A handle on a unique temporary sibling of `path`, renamed over it when the block ends (removed on error)."""
    if path.is_dir() and not path.is_symlink():
        # a folder where the command writes a file (a hand-made results.json/, summary.html/): never replaced
        raise ConfigError(f"{path} is a directory where this command writes a file: remove or rename it")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name != MARKER:
        _mark_claimed(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
        _chmod_umask(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _replace_into(path: Path, write: Callable[[Any], None]) -> None:
    """`write(handle)` into a unique temporary sibling of `path`, renamed over it (removed on failure)."""
    with _replacing(path) as handle:
        write(handle)


def write_text_atomic(path: str | Path, text: str) -> Path:
    path = Path(path)
    _replace_into(path, lambda handle: handle.write(redact_registered(text)))
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

    _replace_into(Path(path), write)
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
        _mark_claimed(target.parent)
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
    tmpdir = _resolved(Path(tempfile.gettempdir()))
    resolved = _resolved(target)
    scratch = target.name.endswith(".tmp") or target.name.startswith(".") or _under(resolved, tmpdir)
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


def load_or_compute(path: str | Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The JSON object at `path` when the file exists, else `compute()` (nothing is written)."""
    path = Path(path)
    if path.exists():
        data: dict[str, Any] = load_json(path, dict, "a JSON object")
        return data
    return compute()


def whole_lines(path: Path) -> bytes:
    """A file a run appends to, up to its last newline: the line a running or killed process is writing is left
    out (and left as it is: readers never change a run directory)."""
    data = Path(path).read_bytes()
    return data[: data.rfind(b"\n") + 1]


# --- reading ------------------------------------------------------------------------------------------------

#: the largest user file read whole (a YAML config, a JSON export, manifest or state file, a CSV table): a bigger
#: one is a DataError naming this bound, raised from the file's size before anything is read or parsed (a 300 MB
#: study.yaml would otherwise take minutes and gigabytes). JSONL files (benchmarks, predictions) are parsed a line
#: at a time, each line bounded in nesting, and are not held to it.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: the longest CSV field, in characters: a longer one is a DataError naming the file, line and column (the csv
#: module's own limit, 131,072, would be a traceback; no published CSV this package reads comes near either)
MAX_CSV_FIELD = 1024 * 1024

_TYPE_NAMES = {dict: "an object", list: "a list", str: "text", int: "an integer", float: "a number",
               bool: "true or false", type(None): "null"}


def type_name(value: Any) -> str:
    """What a JSON or YAML value is, in the words an error message uses."""
    for kind, name in _TYPE_NAMES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


def _too_big(path: Path, size: int, what: str, limit: int) -> DataError:
    return DataError(path, None, None, f"{size:,} bytes: more than MAX_FILE_BYTES ({limit:,} bytes, "
                                       f"{limit // 2**20} MiB), the most a file read whole may have "
                                       f"(expected {what})")


def load_bytes(path: Path, what: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """A user file's bytes, or a DataError saying why not (`what`: what the file should be). A file larger than
    `limit` (MAX_FILE_BYTES) is refused from its size before it is read; a device or pipe that never ends is
    read no further than the bound."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise _too_big(path, size, what, limit)
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise DataError(path, None, None, f"no such file (expected {what})") from None
    except IsADirectoryError:
        raise DataError(path, None, None, f"is a directory (expected {what})") from None
    except OSError as exc:
        raise DataError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise _too_big(path, len(data), what, limit)
    return data


def _decode(data: bytes, path: Path, line: int | None = None) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        at = line if line is not None else data[: exc.start].count(b"\n") + 1
        raise DataError(path, at, None, f"not UTF-8 text (byte {data[exc.start]:#04x})") from None


def check_nesting(value: Any, path: str | Path, line: int | None = None, field: str | None = None,
                  limit: int = MAX_NESTING) -> None:
    """A DataError when objects and lists are nested more than `limit` levels (checked without recursion); the
    error names `field`, else the top-level key the deep value is under."""
    stack: list[tuple[Any, int, str | None]] = [(value, 1, field)]
    while stack:
        node, depth, top = stack.pop()
        if depth > limit:
            raise DataError(path, line, top, f"nested more than {limit} levels deep (objects and lists)")
        if isinstance(node, dict):
            stack.extend((child, depth + 1, top if top is not None or depth > 1 else str(key))
                         for key, child in node.items() if isinstance(child, dict | list))
        elif isinstance(node, list):
            stack.extend((child, depth + 1, top) for child in node if isinstance(child, dict | list))


def _expect(value: Any, expect: type | tuple[type, ...] | None, what: str, path: Path,
            line: int | None = None) -> Any:
    if expect is not None and not isinstance(value, expect):
        raise DataError(path, line, None, f"expected {what}, got {type_name(value)}")
    return value


def parse_json(text: str | bytes, path: str | Path, line: int | None = None,
               expect: type | tuple[type, ...] | None = None, what: str = "JSON") -> Any:
    """One JSON document (a file's text, or one line of a JSONL file at `line`), bounded and type-checked."""
    path = Path(path)
    if isinstance(text, bytes):
        text = _decode(text, path, line)
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        at = exc.lineno if line is None else line
        raise DataError(path, at, None, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise DataError(path, line, None, f"nested more than {MAX_NESTING} levels deep (objects and lists)") from None
    except _DuplicateKey as dup:
        raise DataError(path, line, shown(dup.key), DUPLICATE_JSON_KEY) from None
    check_nesting(value, path, line)
    return _expect(value, expect, what, path, line)


#: the message of a JSON object that gives a key twice (JSON parsers keep the last value silently)
DUPLICATE_JSON_KEY = "duplicate key: each key of an object is given once"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: the object, or _DuplicateKey at a key given twice."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key, 0, 0)
            seen.add(key)
    return out


def duplicate_key(raw: bytes, value: Any) -> str | None:
    """The first key an object of the JSON text `raw` gives twice, or None. `value` is `raw` as parsed by a
    reader that keeps the last of two equal keys (orjson, for JSONL). Exact, and cheap for a line as JSON writers
    write it: every key ends in `":`, so a line holding as many `":` as `value` written again by orjson repeats no
    key; a line where the two counts could differ for another reason (a space before a colon, a quote or a colon
    spelt \\u0022 or \\u003a) or do differ is parsed again with a hook that sees every pair."""
    import orjson

    if b":" not in raw:
        return None
    try:
        again = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        again = b""
    if (again and raw.count(b'":') == again.count(b'":') and _SPACED_COLON.search(raw) is None
            and b"\\u0022" not in raw and b"\\u003a" not in raw and b"\\u003A" not in raw):
        return None
    try:
        json.loads(raw, object_pairs_hook=_unique_keys)
    except _DuplicateKey as dup:
        return str(dup.key)
    except (ValueError, RecursionError):  # what orjson read and json does not: its reader has the last word
        return None
    return None


#: a quote, white space, a colon: a key written with space before its colon (or such text inside a string)
_SPACED_COLON = re.compile(rb'"\s+:')


def load_json(path: str | Path, expect: type | tuple[type, ...] | None = None, what: str = "JSON") -> Any:
    """A user's JSON file (an export, a manifest, a state file), bounded and type-checked: the value, or a
    DataError naming the file and line (`what` says what the file should be)."""
    path = Path(path)
    return parse_json(load_bytes(path, what), path, None, expect, what)


class _DuplicateKey(Exception):
    """Raised by the YAML loader at a mapping's second use of a key (turned into a DataError by `load_yaml`)."""

    def __init__(self, key: Any, line: int, first: int) -> None:
        super().__init__(key, line, first)
        self.key, self.line, self.first = key, line, first


@functools.cache
def _yaml_loader() -> Any:
    """The safe loader (libyaml's when installed) that refuses a key a mapping already has: YAML's rule is that
    keys are unique, and PyYAML otherwise keeps the last value silently."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    merge = "tag:yaml.org,2002:merge"

    class UniqueKeyLoader(base):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                first: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == merge:
                        continue
                    key = self.construct_object(key_node, deep=True)
                    with contextlib.suppress(TypeError):  # an unhashable key: the base loader says so
                        if key in first:
                            raise _DuplicateKey(key, key_node.start_mark.line + 1, first[key])
                        first[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def load_yaml(path: str | Path, expect: type | tuple[type, ...] | None = None, what: str = "YAML") -> Any:
    """A user's YAML file (a config, a project file), the one YAML loader of the package, bounded before anything
    is built: the file's size (MAX_FILE_BYTES); its nesting, counted on the parser's events (no recursion, so
    10,000 levels are an error naming the line, not a RecursionError); anchors and aliases are refused (nine
    lines of nested aliases expand to billions of nodes: a "billion laughs" bomb); a key given twice in one
    mapping is an error naming both lines, not the last one silently winning. Safe tags only (no Python
    objects)."""
    import yaml

    path = Path(path)
    text = _decode(load_bytes(path, what), path)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            mark = event.start_mark
            line = mark.line + 1 if mark is not None else None
            if isinstance(event, yaml.AliasEvent):
                raise DataError(path, line, None, f"an alias (*{event.anchor}): anchors and aliases are not read "
                                                  "(write each value out in full)")
            if isinstance(event, yaml.NodeEvent) and event.anchor is not None:
                raise DataError(path, line, None, f"an anchor (&{event.anchor}): anchors and aliases are not "
                                                  "read (write each value out in full)")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING:
                    raise DataError(path, line, None,
                                    f"nested more than {MAX_NESTING} levels deep (mappings and lists)")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        loader = _yaml_loader()(text)
        try:
            value = loader.get_single_data()
        finally:
            loader.dispose()
    except _DuplicateKey as dup:
        raise DataError(path, dup.line, shown(dup.key), f"duplicate key (first on line {dup.first}): each key "
                                                        "of a mapping is given once") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "maximum nesting depth" in problem:  # libyaml's own bound (1,000 levels), far beyond ours
            raise DataError(path, mark.line + 1 if mark is not None else None, None,
                            f"nested more than {MAX_NESTING} levels deep (mappings and lists)") from None
        raise DataError(path, mark.line + 1 if mark is not None else None, None,
                        f"not readable YAML: {problem}") from None
    return _expect(value, expect, what, path)


def field_of(obj: dict[str, Any], key: str, expect: type | tuple[type, ...], what: str, path: str | Path,
             line: int | None = None, where: str = "", default: Any = None) -> Any:
    """`obj[key]` when it is of type `expect` (absent or null: `default`); else a DataError naming the field
    (`where` + key, e.g. `tasks[3].annotations`)."""
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in (expect if isinstance(expect, tuple) else (expect,)):
        raise DataError(path, line, f"{where}{key}", f"expected {what}, got {type_name(value)}")
    if not isinstance(value, expect):
        raise DataError(path, line, f"{where}{key}", f"expected {what}, got {type_name(value)}")
    return value


def parse_count(text: str, path: str | Path, line: int | None, field: str) -> int:
    """A whole number of 0 or more written in ASCII digits (a count or an index read from text, e.g. a CSV cell):
    `int()` would also take "1_0" (as 10), " -5" (an index from the end) and non-ASCII digits."""
    stripped = text.strip()
    if not (stripped.isascii() and stripped.isdigit()):
        raise DataError(path, line, field, f"expected a whole number of 0 or more in digits, got {shown(text)}")
    return int(stripped)


def parse_csv(data: bytes, path: str | Path, required: Sequence[str] = (),
              on_error: Callable[[DataError], None] | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of a CSV file's bytes as (first line of the row, {column: cell}), the package's one CSV reader:
    UTF-8 checked (a DataError naming the line of the first bad byte); the header must hold the `required`
    columns; a row with more cells than the header, or a cell longer than MAX_CSV_FIELD characters, is a
    DataError naming line and column, given to `on_error` (the row is then skipped) or raised; a row with fewer
    cells lacks the keys of the missing ones. Blank lines are skipped."""
    import csv
    import io

    path = Path(path)
    text = _decode(data, path)
    if csv.field_size_limit() < MAX_FILE_BYTES:  # the bound is checked below, where the column can be named
        csv.field_size_limit(MAX_FILE_BYTES)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(path, None, None, "empty: expected a CSV header line")
        for column in required:
            if column not in header:
                raise DataError(path, 1, column, f"column missing from the header ({', '.join(map(shown, header))})")
        twice = sorted({column for column in header if header.count(column) > 1})
        if twice:  # a row would keep only the last of the two cells: which one was meant is unknown
            raise DataError(path, 1, twice[0], "column named twice in the header")
        end = reader.line_num
        for cells in reader:
            start, end = end + 1, reader.line_num
            if not cells:
                continue
            problem: DataError | None = None
            if len(cells) > len(header):
                problem = DataError(path, start, None, f"{len(cells)} cells, more than the header's {len(header)} "
                                                       "columns")
            for column, cell in zip(header, cells):
                if problem is None and len(cell) > MAX_CSV_FIELD:
                    problem = DataError(path, start, column, f"{len(cell):,} characters: more than MAX_CSV_FIELD "
                                                             f"({MAX_CSV_FIELD:,}), the longest CSV field read")
            if problem is not None:
                if on_error is None:
                    raise problem
                on_error(problem)
                continue
            yield start, dict(zip(header, cells))
    except csv.Error as exc:
        raise DataError(path, reader.line_num or None, None, f"not readable CSV: {exc}") from None


def read_csv(path: str | Path, what: str, required: Sequence[str] = (),
             on_error: Callable[[DataError], None] | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """`parse_csv` of a user's CSV file (bounded by MAX_FILE_BYTES; `what`: what the file should be)."""
    path = Path(path)
    return parse_csv(load_bytes(path, what), path, required, on_error)
