"""Memory store and importers: round trip, errors naming file/line/field, and what importers keep and skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailorbench.errors import DataError
from tailorbench.memory.importers import ImportStats, import_openai_messages, import_wildchat
from tailorbench.memory.store import MemoryItem, by_user, read_memory, write_memory


def test_round_trip_keeps_unicode(tmp_path: Path) -> None:
    items = [MemoryItem(user_id="u1", id="1", text="我喜欢喝茶", time="2025-01-01", source="manual", kind="note"),
             MemoryItem(user_id="u2", id="1", text="I like tea")]
    path = tmp_path / "m.jsonl"
    assert write_memory(items, path) == 2
    assert "我喜欢喝茶" in path.read_text(encoding="utf-8")
    assert read_memory(path) == items
    assert list(by_user(items)) == ["u1", "u2"]


@pytest.mark.parametrize(
    ("line", "field"),
    [('{"user_id": "u", "id": "1"}', "text"), ('{"user_id": "u", "id": "1", "text": " "}', "text"),
     ('{"user_id": "u", "id": "1", "text": "x", "mood": 1}', "mood")],
)
def test_bad_rows_name_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"user_id": "u", "id": "0", "text": "ok"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_memory(path)
    assert (err.value.line, err.value.field) == (2, field)


def test_duplicate_id_per_user(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"user_id": "u", "id": 1, "text": "a"}\n{"user_id": "v", "id": 1, "text": "b"}\n'
                    '{"user_id": "u", "id": "1", "text": "c"}\n', encoding="utf-8")
    with pytest.raises(DataError, match="duplicate id '1' for user 'u' \\(first on line 1\\)"):
        read_memory(path)


def test_openai_messages_jsonl_and_list(tmp_path: Path) -> None:
    convo = {"id": "c9", "user_id": "alice", "created": 1735689600, "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "I run marathons"},
        {"role": "assistant", "content": "Nice!"},
        {"role": "user", "content": [{"type": "text", "text": "and I am vegan"}, {"type": "image_url"}]},
        {"role": "user", "content": "   "},
    ]}
    jsonl = tmp_path / "chats.jsonl"
    jsonl.write_text(json.dumps(convo) + "\n", encoding="utf-8")
    stats = ImportStats()
    items = import_openai_messages(jsonl, stats=stats)
    assert [(i.id, i.text) for i in items] == [("c9:1", "I run marathons"), ("c9:3", "and I am vegan")]
    assert items[0].time == "2025-01-01T00:00:00+00:00" and items[0].source == "chats.jsonl#c9"
    assert stats.skipped == {"role system": 1, "role assistant": 1, "non-text content part": 1, "empty turn": 1}
    as_list = tmp_path / "chats.json"
    as_list.write_text(json.dumps([{k: v for k, v in convo.items() if k != "user_id"}]), encoding="utf-8")
    with pytest.raises(DataError, match="user_id"):
        import_openai_messages(as_list)
    both = import_openai_messages(as_list, user_id="bob", roles=("user", "assistant"))
    assert [i.user_id for i in both] == ["bob"] * 3


def test_wildchat(tmp_path: Path) -> None:
    rows = [{"conversation_hash": "h1", "hashed_ip": "ip1", "timestamp": "2024-05-01 10:00:00",
             "conversation": [{"role": "user", "content": "帮我写一首关于猫的诗"},
                              {"role": "assistant", "content": "..."}]},
            {"conversation_hash": "h2", "conversation": []}]
    path = tmp_path / "wild.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        import_wildchat(path)
    assert (err.value.line, err.value.field) == (2, "hashed_ip")
    path.write_text(json.dumps(rows[0], ensure_ascii=False) + "\n", encoding="utf-8")
    (item,) = import_wildchat(path)
    assert (item.user_id, item.id, item.time) == ("ip1", "h1:0", "2024-05-01 10:00:00")
