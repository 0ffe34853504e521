"""The memory store: one JSONL line per item, `{user_id, id, text, time, source, kind}`.

Why a flat file: memory is written once by an importer or by hand and read whole by the RAG setting and the
construction pipeline; JSONL diffs well and every error can name its line. Ids are unique per user.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import write_jsonl_atomic


class MemoryItem(BaseModel):
    """One thing known about a user: a message they wrote, a note, a fact."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_id: str
    id: str
    text: str
    #: ISO 8601 time (or any sortable string) when known
    time: str | None = None
    #: where it came from: a file name, a conversation id, "manual"
    source: str | None = None
    #: message | note | fact | ...
    kind: str = "message"

    @field_validator("user_id", "id", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("text", "user_id", "id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


def read_memory(path: str | Path) -> list[MemoryItem]:
    """All items of a memory file, in file order. A bad line raises DataError naming file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such memory file")
    items: list[MemoryItem] = []
    seen: dict[tuple[str, str], int] = {}
    for line, row in read_jsonl(path, InvalidRows()):
        try:
            item = MemoryItem.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or None
            raise DataError(path, line, field, first["msg"]) from None
        key = (item.user_id, item.id)
        if key in seen:
            raise DataError(path, line, "id", f"duplicate id {item.id!r} for user {item.user_id!r} "
                                              f"(first on line {seen[key]})")
        seen[key] = line
        items.append(item)
    return items


def write_memory(items: Iterable[MemoryItem], path: str | Path) -> int:
    """Write items as JSONL (UTF-8, unescaped); returns the count. Written to a temporary file, then renamed,
    so an interrupted write never leaves half a store."""
    path = Path(path)
    return write_jsonl_atomic(path, (item.model_dump() for item in items))


def by_user(items: Iterable[MemoryItem]) -> dict[str, list[MemoryItem]]:
    """Items grouped by user, each user's in file order."""
    out: dict[str, list[MemoryItem]] = {}
    for item in items:
        out.setdefault(item.user_id, []).append(item)
    return out
