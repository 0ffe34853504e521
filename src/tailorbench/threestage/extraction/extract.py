"""Stage 1, the extractor: a model reads a user's conversations and lists attributes with the turns that support
them (`templates/extract.jinja`), written as the stage-1 item file. An output that is neither the JSON asked for
nor bullet lines is an item with `status: invalid` and no attributes, counted."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.errors import DataError
from tailorbench.files import Output, type_name
from tailorbench.models.base import GenParams, Message
from tailorbench.prompts import compile_template, split_messages
from tailorbench.threestage.llm import ask
from tailorbench.threestage.recentering_formats import get_list, get_str, jsonl

TEMPLATE = Path(__file__).with_name("templates") / "extract.jinja"


def user_turns(conversations: Sequence[Any]) -> list[str]:
    """The user's turns across conversations, in order (turn numbers in prompts and evidence start at 1)."""
    out: list[str] = []
    for conv in conversations:
        turns = conv if isinstance(conv, list) else [conv]
        for t in turns:
            if isinstance(t, dict) and t.get("role", "user") == "user" and isinstance(t.get("content"), str):
                out.append(t["content"])
            elif isinstance(t, str):
                out.append(t)
    return out


def parse_attributes(text: str) -> list[tuple[str, list[int]]] | None:
    """JSON `{"attributes": [{"text", "evidence"}]}` (possibly fenced), else `- text [1, 3]` bullet lines; None
    when neither is there (an invalid extraction, counted)."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            data = json.loads(match.group())
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("attributes"), list):
            out: list[tuple[str, list[int]]] = []
            for a in data["attributes"]:
                if isinstance(a, str) and a.strip():
                    out.append((a.strip(), []))
                elif isinstance(a, dict) and isinstance(a.get("text"), str) and a["text"].strip():
                    ev = [int(x) for x in a.get("evidence") or [] if isinstance(x, int) and not isinstance(x, bool)]
                    out.append((a["text"].strip(), ev))
            return out
    bullets = re.findall(r"^\s*[-*]\s+(.+?)\s*(?:\[([\d,\s]+)\])?\s*$", text, re.MULTILINE)
    if bullets:
        return [(t, [int(x) for x in ev.split(",") if x.strip()]) for t, ev in bullets]
    return None


def read_conversations(path: str | Path) -> list[tuple[str, list[Any], str]]:
    """(user id, conversations, source) of each line of a conversations file, `{"user_id", "conversations",
    "source"?}`: the one reader of it (the stage verb and the study's plan), a bad line a DataError naming it."""
    rows = []
    for line, rec in jsonl(path):
        convs = get_list(rec, "conversations", path, line)
        for i, conv in enumerate(convs):
            for j, turn in enumerate(conv if isinstance(conv, list) else [conv]):
                _check_turn(turn, path, line, f"conversations[{i}]" + (f"[{j}]" if isinstance(conv, list) else ""))
        rows.append((get_str(rec, "user_id", path, line), convs, str(rec.get("source") or "unknown")))
    return rows


#: the roles a conversation turn may have (absent: a user turn)
ROLES = ("user", "assistant", "system")


def _check_turn(turn: Any, path: str | Path, line: int, where: str) -> None:
    """A turn is text (the user's), or `{"role"?, "content"}` with a known role and text content: anything else
    would be left out of the extractor's prompt silently."""
    if isinstance(turn, str):
        return
    if not isinstance(turn, dict):
        raise DataError(path, line, where, f"a turn is text or {{role, content}}, got {type_name(turn)}")
    role = turn.get("role", "user")
    if role not in ROLES:
        raise DataError(path, line, f"{where}.role", f"expected one of {', '.join(ROLES)}, got {role!r}")
    if not isinstance(turn.get("content"), str):
        raise DataError(path, line, f"{where}.content", f"expected text, got {type_name(turn.get('content'))}")


def extract(conversations_path: str | Path, model: str, out: Output, name: str | None = None,
            options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the extractor over `{"user_id", "conversations", "source"?}` lines; write the stage-1 item file (the
    file output `out`)."""
    rows = read_conversations(conversations_path)
    template, _ = compile_template(TEMPLATE, "extract template")
    prompts: list[list[Message]] = [split_messages(template.render(turns=user_turns(convs))) for _, convs, _ in rows]
    batch = ask(model, prompts, parse_attributes, GenParams(temperature=0.0, max_tokens=512), options)
    extractor = name or model
    n_attr = 0
    lines = []
    for index, ((user, convs, source), ans) in enumerate(zip(rows, batch.answers)):
        attrs = list(dict.fromkeys(t for t, _ in ans.value or []))
        evidence = {t: ev for t, ev in ans.value or []}
        n_attr += len(attrs)
        row = {"index": index, "user_id": user, "attributes": attrs, "evidence": [evidence[a] for a in attrs],
               "conversations": convs, "extractor": extractor, "source": source, "status": ans.status}
        if ans.status != "ok":
            row["raw"] = ans.raw
        lines.append(row)
    out.write_jsonl(None, lines)
    return {"extractor": extractor, "out": str(out.path()), "users": len(rows), "attributes": n_attr,
            **batch.accounting()}
