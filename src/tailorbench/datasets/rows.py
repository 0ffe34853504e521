"""Shared row handling for every reader: the package's one JSONL reader (`read_jsonl`, and `first_jsonl_row`
for layout detection), the pair hash, and the invalid-row policy (stop with file/line/field, or skip and count).
Benchmarks, scored data, annotation imports, ratings, memory stores, stage files and the files build and gen-eval
read back all go through `read_jsonl` / `parse_jsonl`, so a bad line is reported the same way everywhere."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson

from tailorbench.errors import DataError, shown
from tailorbench.files import (
    DUPLICATE_JSON_KEY,
    MAX_NESTING,
    check_nesting,
    cut_torn_line,
    duplicate_key,
    type_name,
)
from tailorbench.schema import id_problem

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


def pair_hash(user_id: str, question: str, chosen: str, rejected: str) -> str:
    """Identity of a labelled pair: equal hashes are repeated rows; hash(.., rejected, chosen) finds flips."""
    digest = hashlib.blake2b("\x1f".join((user_id, question, chosen, rejected)).encode("utf-8"), digest_size=8)
    return digest.hexdigest()


@dataclass
class InvalidRows:
    """The invalid-row policy: raise the first DataError, or (skip=True) record it and go on."""

    skip: bool = False
    rows: list[DataError] = field(default_factory=list)

    def handle(self, error: DataError) -> None:
        if not self.skip:
            raise error
        self.rows.append(error)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [{"path": e.path, "line": e.line, "field": e.field, "message": e.message} for e in self.rows]


def _decode(raw: bytes) -> dict[str, Any] | str | tuple[str, str | None]:
    """One JSONL line: the object, or why it is not one (the message of its DataError, with its field)."""
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return f"not valid UTF-8 (byte {bad.start}): wrong encoding?"
        return f"malformed JSON: {exc.msg} at column {exc.colno}"
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    if raw.count(b"{") + raw.count(b"[") > MAX_NESTING:  # cheap bound first: depth <= the openers
        try:
            check_nesting(row, "")
        except DataError as error:
            return error.message, error.field
    repeated = duplicate_key(raw, row)  # orjson keeps the last of two equal keys: a line's silent misreading
    if repeated is not None:
        return DUPLICATE_JSON_KEY, shown(repeated)
    return row


def _unpacked(path: Path, data: bytes) -> bytes:
    """The text bytes of a file's content: gunzipped for `.gz`, without a UTF-8 byte order mark."""
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(path, None, None, f"not a readable gzip file: {exc}") from None
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def read_jsonl(path: Path, invalid: InvalidRows) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line, object) for each non-blank line of a JSONL file (gzip-compressed when its name ends
    in `.gz`). Bad encoding or JSON, or a line that is not an object, is reported per line through `invalid`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(path, None, None, f"cannot read file: {exc.strerror or exc}") from exc
    remember_digest(path, data)
    yield from parse_jsonl(path, _unpacked(path, data), invalid)


def parse_jsonl(path: Path, data: bytes, invalid: InvalidRows) -> Iterator[tuple[int, dict[str, Any]]]:
    """`read_jsonl` over bytes already read from `path` (named in the errors)."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        row = _decode(raw)
        if not isinstance(row, dict):
            message, field_name = (row, None) if isinstance(row, str) else row
            invalid.handle(DataError(path, number, field_name, message))
            continue
        yield number, row


def read_appended_jsonl(path: Path, parse: Callable[[Path, bytes], list[T]] | None = None) -> list[T]:
    """The rows of a JSONL file this package appends to (predictions, verdicts, generations): a torn last line
    (the process was killed mid-write) is cut off, once every whole line has been read without error (`parse`:
    bytes -> rows, by default `parse_jsonl` raising the first DataError). No file: no rows."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    rows: list[Any] = (parse(path, data[:end]) if parse is not None
                       else [row for _, row in parse_jsonl(path, data[:end], InvalidRows())])
    if end != len(data):
        cut_torn_line(path, end)
    return rows


def last_per_key(rows: Iterable[T], key: Callable[[T], Hashable]) -> list[T]:
    """The run files' format rule (docs/data.md, "Predictions"): a file a run appends to (predictions.jsonl,
    verdicts.jsonl, generations.jsonl) may hold several lines for one key (a failed call retried by `--resume`
    appends its new line), and the LAST line per key is the one that counts. Every reader of those files goes
    through here, so report, compare, view, reliability, agreement and resume can never count a key differently.
    Rows keep the place of their key's first line (a retry does not reorder a run)."""
    latest: dict[Hashable, T] = {}
    for row in rows:
        latest[key(row)] = row
    return list(latest.values())


def done_keys(rows: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], K]) -> set[K]:
    """The keys whose last line is a finished answer (any status but `failed`): what `--resume` of every run
    kind skips. A failed call (an error, nothing answered) is tried again; an invalid verdict is an answer the
    judge gave, and is kept."""
    return {key(row) for row in last_per_key(rows, key) if row.get("status") != "failed"}


def first_jsonl_row(path: Path) -> dict[str, Any] | None:
    """The first object of a JSONL file, reading no further than its first non-blank line (layout detection);
    None when that line is not a readable JSON object or the file cannot be read (its reader says why)."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as packed:
                lines: Iterator[bytes] = iter(packed.readline, b"")
                first = next((raw for raw in lines if raw.strip()), b"")
        else:
            with path.open("rb") as handle:
                first = next((raw for raw in handle if raw.strip()), b"")
    except (OSError, EOFError, zlib.error):
        return None
    row = _decode(first[3:] if first.startswith(b"\xef\xbb\xbf") else first) if first else None
    return row if isinstance(row, dict) else None


#: sha256 of files already read in this process, keyed by (path, size, mtime): the fingerprint of a large
#: benchmark then costs no second read
_DIGESTS: dict[tuple[str, int, int], bytes] = {}


def _file_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def remember_digest(path: Path, data: bytes) -> None:
    """Record the sha256 of bytes just read from `path` (readers call this; fingerprint_files reuses it)."""
    _DIGESTS[_file_key(path)] = hashlib.sha256(data).digest()


def fingerprint_files(paths: list[Path]) -> str:
    """sha256 over the bytes of every file a benchmark was read from (names relative, sorted)."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode("utf-8") + b"\x00")
        known = _DIGESTS.get(_file_key(path))
        digest.update(known if known is not None else hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def require_text(row: dict[str, Any], key: str, path: Path, line: int) -> str:
    """A required, non-empty string field. A number is refused, not turned into text: `"chosen": 5` is a
    broken row, and reading it as the answer "5" would score it silently (ids, which are often numbers, are
    read by `require_id`)."""
    value = row.get(key)
    if type(value) is str and value and not value.isspace():  # the common case, fast
        return value
    if key not in row or row[key] is None:
        raise DataError(path, line, key, "missing required field")
    value = row[key]
    if not isinstance(value, str):
        raise DataError(path, line, key, f"expected text, got {type_name(value)}")
    raise DataError(path, line, key, "must not be empty")


def require_id(row: dict[str, Any], key: str, path: Path, line: int) -> str:
    """A required id field: text, or a whole number written as one (read as its digits); never a control
    character (a NUL or an escape in an id would reach every report and terminal, and the case model refuses it)."""
    value = row.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is not None and not isinstance(value, str):
        raise DataError(path, line, key, f"expected text or a whole number, got {type_name(value)}")
    text = require_text(row, key, path, line)
    problem = id_problem(text)
    if problem is not None:
        raise DataError(path, line, key, problem)
    return text
