"""The ground rules for the files tailorbench touches.

Writing (the output rule of every verb): an output is checked before any work and without creating anything
(`check_output`: it is not one of the command's inputs, a directory it replaces files in is empty or the verb's
own earlier output, its parents can be created); every file goes to a unique temporary sibling first and is
renamed into place (`write_text_atomic`), so an interrupted or failed run never leaves half a file where a
good one was; every text written has the process's registered secrets masked (`redact.py`), a last guard
behind redaction at the sources.

Reading (the one bounded loader of user files: `load_json`, `load_yaml`, `parse_json`): nesting is bounded
(`MAX_NESTING`) so a file 100,000 levels deep is an error message, never a RecursionError; the top level's
type is checked; every error is a DataError naming the file, the line and the field.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError, DataError
from tailorbench.redact import redact_registered

#: the deepest nesting of objects and lists a user file may have (exports and configs are a few levels deep)
MAX_NESTING = 64


# --- writing ------------------------------------------------------------------------------------------------


def check_output(flag: str, path: str | Path, *, inputs: Iterable[str | Path | None] = (), directory: bool = False,
                 ours: Callable[[Path], bool] | None = None, force: bool = False, hint: str = "") -> Path:
    """The output rule, checked before any work and without creating anything. `path` (named by `flag`) must
    not be one of the command's `inputs` (a ConfigError naming both); an existing file must be writable (and
    not a directory, unless `directory`); else the nearest existing ancestor must be a writable directory. An
    existing non-empty `directory` is refused unless it is the verb's own earlier output (`ours(path)`) or
    `force` is given: its files are not the verb's to replace (`hint`: what else the user can do, e.g. "or
    --force to write into it anyway"). Returns the path."""
    target = Path(path).expanduser()
    resolved = _resolved(target)
    for source in inputs:
        if source is None:
            continue
        given = _resolved(Path(source).expanduser())
        if given == resolved or (given.is_dir() and target.is_file() and given in resolved.parents):
            raise ConfigError(f"{flag} {target} is {'also' if given == resolved else 'a file inside'} this "
                              f"command's input {source}: the output would overwrite it; write to another path")
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
        if not force and any(target.iterdir()) and not (ours is not None and ours(target)):
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
    return target


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare it as written
        return path.absolute()


def only_names(patterns: Sequence[str], required: str) -> Callable[[Path], bool]:
    """An `ours` test of `check_output`: a directory holding `required` and nothing but files matching
    `patterns` (glob patterns of the names the verb writes) is the verb's earlier output."""

    def test(folder: Path) -> bool:
        entries = list(folder.iterdir())
        return (folder / required).is_file() and all(
            entry.is_file() and any(entry.match(p) for p in patterns) for entry in entries)

    return test


def _replace_into(path: Path, write: Callable[[Any], None]) -> None:
    """`write(handle)` into a unique temporary sibling of `path`, renamed over it (removed on failure)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    lock, the manifest it began with) and empty files is removed, so a refused command leaves nothing behind."""
    if existed or not folder.is_dir():
        return
    entries = list(folder.iterdir())
    if all(e.is_file() and (e.name in leftovers or e.stat().st_size == 0) for e in entries):
        for entry in entries:
            entry.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # something appeared meanwhile: keep it
            folder.rmdir()


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

_TYPE_NAMES = {dict: "an object", list: "a list", str: "text", int: "an integer", float: "a number",
               bool: "true or false", type(None): "null"}


def type_name(value: Any) -> str:
    """What a JSON or YAML value is, in the words an error message uses."""
    for kind, name in _TYPE_NAMES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


def load_bytes(path: Path, what: str) -> bytes:
    """A user file's bytes, or a DataError saying why not (`what`: what the file should be)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, None, None, f"no such file (expected {what})") from None
    except IsADirectoryError:
        raise DataError(path, None, None, f"is a directory (expected {what})") from None
    except OSError as exc:
        raise DataError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None


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
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        at = exc.lineno if line is None else line
        raise DataError(path, at, None, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise DataError(path, line, None, f"nested more than {MAX_NESTING} levels deep (objects and lists)") from None
    check_nesting(value, path, line)
    return _expect(value, expect, what, path, line)


def load_json(path: str | Path, expect: type | tuple[type, ...] | None = None, what: str = "JSON") -> Any:
    """A user's JSON file (an export, a manifest, a state file), bounded and type-checked: the value, or a
    DataError naming the file and line (`what` says what the file should be)."""
    path = Path(path)
    return parse_json(load_bytes(path, what), path, None, expect, what)


def load_yaml(path: str | Path, expect: type | tuple[type, ...] | None = None, what: str = "YAML") -> Any:
    """A user's YAML file (a config, a project file), bounded before it is built: nesting is counted on the
    parser's events (no recursion), so 10,000 levels are an error naming the line, not a RecursionError."""
    import yaml

    path = Path(path)
    text = _decode(load_bytes(path, what), path)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING:
                    mark = event.start_mark
                    raise DataError(path, mark.line + 1 if mark else None, None,
                                    f"nested more than {MAX_NESTING} levels deep (mappings and lists)")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
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
