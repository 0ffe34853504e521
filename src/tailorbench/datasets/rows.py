"""Shared row handling for every reader: line-exact JSONL reading, the pair hash, and
the invalid-row policy (stop with file/line/field, or skip and count)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tailorbench.errors import DataError


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


def read_jsonl(path: Path, invalid: InvalidRows) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line, object) for each non-blank line. Bad encoding or JSON is reported per line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(path, None, None, f"cannot read file: {exc.strerror or exc}") from exc
    remember_digest(path, data)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                message = f"not valid UTF-8 (byte {bad.start}): wrong encoding?"
            else:
                message = f"malformed JSON: {exc.msg} at column {exc.colno}"
            invalid.handle(DataError(path, number, None, message))
            continue
        if not isinstance(row, dict):
            invalid.handle(DataError(path, number, None, f"expected a JSON object, got {type(row).__name__}"))
            continue
        yield number, row


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
    """A required, non-empty string field (numbers are accepted and turned into text)."""
    value = row.get(key)
    if type(value) is str and value and not value.isspace():  # the common case, fast
        return value
    if key not in row or row[key] is None:
        raise DataError(path, line, key, "missing required field")
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DataError(path, line, key, f"expected text, got {type(value).__name__}")
    text = str(value)
    if not text.strip():
        raise DataError(path, line, key, "must not be empty")
    return text
