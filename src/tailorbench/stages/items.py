"""The stage-2 item file: one (user, new prompt) per line with the attributes shown for it.

`{"index": int, "user_id": str, "prompt_index": int (optional), "prompt": str, "attributes": [str, ...]}` —
the human task-3 files carry no prompt text, so baselines and LLM judges read it from here. The index is the one
the human files use, so votes written from it line up with the humans.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailorbench.errors import DataError
from tailorbench.stages.shapes import get_int, get_list, get_str, jsonl


@dataclass(frozen=True)
class RelevanceItem:
    index: int
    user_id: str
    prompt: str
    attributes: list[str]
    prompt_index: int | None = None


def read_relevance_items(path: str | Path) -> list[RelevanceItem]:
    out: list[RelevanceItem] = []
    seen: set[int] = set()
    for line, rec in jsonl(path):
        index = get_int(rec, "index", path, line)
        if index in seen:
            raise DataError(path, line, "index", f"index {index} appears twice")
        seen.add(index)
        attrs = get_list(rec, "attributes", path, line)
        for j, a in enumerate(attrs):
            if not isinstance(a, str) or not a.strip():
                raise DataError(path, line, f"attributes[{j}]", f"must be a non-empty string, got {a!r}")
        if len(set(attrs)) != len(attrs):
            raise DataError(path, line, "attributes", "an attribute appears twice")
        pi = rec.get("prompt_index")
        out.append(RelevanceItem(index, get_str(rec, "user_id", path, line), get_str(rec, "prompt", path, line),
                                 list(attrs), pi if isinstance(pi, int) else None))
    return out


def write_votes(
    path: str | Path, model: str, items: Sequence[RelevanceItem], votes: Iterable[Sequence[dict[str, Any]]]
) -> None:
    """Votes in the Re-Centering model shape (`relevant: null` + `status` for an invalid or failed vote)."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for item, entries in zip(items, votes):
            row = {"model": model, "sample_index": item.index, "user_id": item.user_id, "items": list(entries)}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
