"""The one reader of user files (the `files` package): `load_json`, `load_yaml`, `parse_json`, `read_csv` (and
datasets/rows.py's `read_jsonl` for JSONL). A file read whole is bounded in size (`MAX_FILE_BYTES`, checked before
reading), nesting is bounded (`MAX_NESTING`) so a file 100,000 levels deep is an error message, never a
RecursionError; YAML has no anchors, aliases or repeated keys; CSV fields are bounded (`MAX_CSV_FIELD`) and text
is UTF-8; the top level's type is checked; every error is a DataError naming the file, the line and the field
(docs/data.md, "Reading files")."""

from __future__ import annotations

import contextlib
import csv
import functools
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tailorbench.errors import DataError, shown

#: the deepest nesting of objects and lists a user file may have (exports and configs are a few levels deep)
MAX_NESTING = 64

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


def validation_message(errors: Sequence[Any], where: Callable[[tuple[Any, ...]], str]) -> str:
    """A config's first pydantic error (`ValidationError.errors()`) as one line: the key path (`where` turns the
    location into the config's own words), the message, the type given when the type was wrong, and the count."""
    first = errors[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    if str(first["type"]).endswith(("_type", "_parsing")):  # a wrong type: say what was given
        message += f", got {type_name(first.get('input'))}"
    return f"{where(tuple(first['loc']))}: {message} ({len(errors)} error(s) in all)"


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
