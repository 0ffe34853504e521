"""Importers: chat logs -> memory items. Only the user's own turns become memory by default (what the user
said about themselves); assistant turns can be kept with `roles=("user", "assistant")`.

- OpenAI messages: JSONL, one conversation per line: `{"messages": [{"role", "content"}, ...]}` with optional
  `user_id`, `id`, `time`/`created`; or a single JSON list of such conversations. `content` may be a string or
  a list of `{"type": "text", "text": ...}` parts (other parts are counted as skipped).
- WildChat-style: JSONL rows with `conversation` (turns with `role`, `content`, optional `timestamp`), a
  conversation id (`conversation_hash` or `conversation_id`), the user in `hashed_ip` or `user_id`, and
  `timestamp`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import load_json
from tailorbench.memory.store import MemoryItem


@dataclass
class ImportStats:
    """What an import kept and what it skipped (and why): nothing is dropped silently."""

    conversations: int = 0
    items: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _text_of(content: Any, stats: ImportStats) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                stats.skip("non-text content part")
        return "\n".join(parts)
    return ""


def _time(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        from datetime import datetime, timezone

        return datetime.fromtimestamp(float(value), timezone.utc).isoformat(timespec="seconds")
    return str(value)


def _turns(
    turns: Any, path: Path, line: int, field_name: str, user_id: str, conv_id: str, conv_time: str | None,
    roles: Sequence[str], stats: ImportStats,
) -> Iterator[MemoryItem]:
    if not isinstance(turns, list):
        raise DataError(path, line, field_name, "must be a list of turns")
    stats.conversations += 1
    for k, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise DataError(path, line, f"{field_name}[{k}]", "each turn must be an object with role and content")
        role = str(turn.get("role", ""))
        if role not in roles:
            stats.skip(f"role {role or '(none)'}")
            continue
        text = _text_of(turn.get("content"), stats).strip()
        if not text:
            stats.skip("empty turn")
            continue
        stats.items += 1
        yield MemoryItem(
            user_id=user_id,
            id=f"{conv_id}:{k}",
            text=text,
            time=_time(turn.get("timestamp") or turn.get("time") or turn.get("created")) or conv_time,
            source=f"{path.name}#{conv_id}",
            kind="message",
        )


def import_openai_messages(
    path: str | Path, user_id: str | None = None, roles: Sequence[str] = ("user",),
    stats: ImportStats | None = None,
) -> list[MemoryItem]:
    """Memory items from OpenAI-messages conversations. `user_id` names the user when rows carry none."""
    path = Path(path)
    stats = stats if stats is not None else ImportStats()
    rows: list[tuple[int, dict[str, Any]]]
    head = path.read_bytes()[:4096].lstrip() if path.is_file() else b""
    if head.startswith(b"["):
        data = load_json(path, list, "a JSON list of conversations")
        rows = [(k + 1, r) for k, r in enumerate(data)]
    else:
        if not path.is_file():
            raise DataError(path, None, None, "no such file")
        rows = list(read_jsonl(path, InvalidRows()))
    items: list[MemoryItem] = []
    for line, row in rows:
        if not isinstance(row, dict) or "messages" not in row:
            raise DataError(path, line, "messages", "missing: expected {\"messages\": [{role, content}, ...]}")
        uid = row.get("user_id", user_id)
        if uid is None or str(uid).strip() == "":
            raise DataError(path, line, "user_id", "missing (give user_id=... for files of a single user)")
        conv_id = str(row.get("id", row.get("conversation_id", f"c{line}")))
        conv_time = _time(row.get("time", row.get("created")))
        items.extend(_turns(row["messages"], path, line, "messages", str(uid), conv_id, conv_time, roles, stats))
    return items


def import_wildchat(
    path: str | Path, roles: Sequence[str] = ("user",), stats: ImportStats | None = None
) -> list[MemoryItem]:
    """Memory items from WildChat-style conversation JSONL; the user is `hashed_ip` (or `user_id`)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file")
    stats = stats if stats is not None else ImportStats()
    items: list[MemoryItem] = []
    for line, row in read_jsonl(path, InvalidRows()):
        if "conversation" not in row:
            raise DataError(path, line, "conversation", "missing: expected a list of turns")
        uid = row.get("user_id") or row.get("hashed_ip")
        if not uid:
            raise DataError(path, line, "hashed_ip", "missing: no user (hashed_ip or user_id)")
        conv_id = str(row.get("conversation_hash") or row.get("conversation_id") or f"c{line}")
        conv_time = _time(row.get("timestamp"))
        items.extend(_turns(row["conversation"], path, line, "conversation", str(uid), conv_id, conv_time, roles,
                            stats))
    return items
