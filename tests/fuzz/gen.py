"""Generators of benchmark rows, personas and ratings: valid ones (with what they must load to) and the defects
that can be planted in them (with the line and field the error must name)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from tailorbench.personas import MAX_DEPTH

#: printable text of every script the data uses, never blank (answers, questions, persona values)
_ALPHABET = st.characters(blacklist_categories=("Cs", "Cc"), min_codepoint=32, max_codepoint=0x9FFF)
_FIRST = st.sampled_from(list("aZé小雨q?"))
text = st.tuples(_FIRST, st.text(_ALPHABET, max_size=10)).map("".join)
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: names safe as file names and JSON keys (persona keys, user ids of the mirror)
name = st.tuples(st.sampled_from(_LETTERS), st.text(_LETTERS + "0123456789_", max_size=7)).map("".join)
blank = st.sampled_from(["", " ", "  \t", "\u3000"])

SPLITS = ("general", "specific")
TIERS = ("easy", "medium", "hard")
SECTION_KEYS = ("Name", "Demographics", "Personality", "Preference", "Bias", "Pattern", "bias", "preference",
                "Hobbies")
SUB_KEYS = ("Age", "Gender", "Nationality", "Extraversion_or_Intraversion", "Judging_or_Pereceiving",
            "Sensing_or_Intuition", "Food", "Travel", "Values_and_Interests")

leaf = st.one_of(text, st.integers(-99, 99), st.booleans(), st.lists(text, max_size=3))
persona: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.sampled_from(SECTION_KEYS),
    st.one_of(leaf, st.dictionaries(st.sampled_from(SUB_KEYS), st.one_of(leaf, st.dictionaries(name, leaf,
                                                                                               max_size=2)),
                                    max_size=4)),
    max_size=4,
)


def nested(depth: int) -> dict[str, Any]:
    """A mapping `depth` levels deep (one key per level), built without recursion."""
    node: dict[str, Any] = {"x": 1}
    for _ in range(depth - 1):
        node = {"x": node}
    return node


too_deep = st.integers(MAX_DEPTH + 1, MAX_DEPTH + 40).map(nested)


@st.composite
def native_rows(draw: st.DrawFn, min_rows: int = 1, max_rows: int = 6) -> list[dict[str, Any]]:
    """Valid native PairCase rows: unique explicit ids on some, none on others (the reader makes them)."""
    n = draw(st.integers(min_rows, max_rows))
    rows = []
    users = draw(st.lists(_USER, min_size=1, max_size=3))
    profiles = draw(st.lists(persona, min_size=1, max_size=2))
    for k in range(n):
        chosen = draw(text)
        rejected = draw(text)
        if rejected == chosen:
            rejected += "!"
        row: dict[str, Any] = {"split": draw(_SPLIT), "tier": draw(_TIER),
                               "user_id": users[draw(st.integers(0, len(users) - 1))], "question": draw(text),
                               "chosen": chosen, "rejected": rejected}
        how = draw(_ID_HOW)
        if how == "id":
            row["id"] = f"case-{k}-{draw(_SMALL)}"
        elif how == "null":
            row["id"] = None
        elif how == "empty":
            row["id"] = ""
        extras = draw(_EXTRAS)
        if extras & 1:
            row["persona"] = profiles[draw(st.integers(0, len(profiles) - 1))]
        if extras & 2:
            row["meta"] = {"source": draw(text)}
        if extras & 4:
            row = dict(reversed(row.items()))
        rows.append(row)
    return rows


_USER = st.one_of(name, st.integers(0, 50))
_SPLIT = st.sampled_from(SPLITS)
_TIER = st.sampled_from(TIERS)
_ID_HOW = st.sampled_from(["id", "none", "null", "empty"])
_SMALL = st.integers(0, 99)
_EXTRAS = st.integers(0, 7)


@st.composite
def layout_text(draw: st.DrawFn, rows: list[dict[str, Any]]) -> tuple[bytes, list[int]]:
    """JSONL bytes of the rows (blank lines between, CRLF or LF, maybe a BOM, ASCII or UTF-8) and the 1-based
    line of each row."""
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    ascii_only = draw(st.booleans())
    out = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    lines: list[int] = []
    number = 0
    blanks = draw(st.lists(st.sampled_from([b"", b"", b"", b"", b" ", b"\t"]), min_size=len(rows),
                           max_size=len(rows)))
    for row, gap in zip(rows, blanks):
        if gap or draw(st.integers(0, 5)) == 0:
            out += gap + eol
            number += 1
        out += json.dumps(row, ensure_ascii=ascii_only).encode("utf-8") + eol
        number += 1
        lines.append(number)
    return out, lines


#: (kind, field the error names) of every defect a native row can carry
NATIVE_DEFECTS: tuple[tuple[str, str | None], ...] = (
    *((f"missing:{f}", f) for f in ("split", "tier", "user_id", "question", "chosen", "rejected")),
    *((f"null:{f}", f) for f in ("split", "tier", "user_id", "question", "chosen", "rejected")),
    *((f"type:{f}", f) for f in ("question", "chosen", "rejected", "split", "tier", "user_id", "id")),
    *((f"blank:{f}", f) for f in ("question", "chosen", "rejected", "user_id")),
    ("value:split", "split"), ("value:tier", "tier"), ("same", "rejected"), ("duplicate", "id"),
    ("extra", "colour"), ("persona:type", "persona"), ("persona:deep", "persona"), ("meta:type", "meta"),
    ("json", None), ("not-object", None), ("encoding", None),
)

wrong_type = st.one_of(st.lists(st.integers(), max_size=2), st.dictionaries(name, st.integers(), max_size=2),
                       st.booleans(), st.integers(0, 99).map(lambda n: n + 0.5))


def plant_native(draw: st.DrawFn, rows: list[dict[str, Any]], k: int, kind: str) -> bytes | None:
    """Change row k to carry `kind`; returns raw bytes for the line when the defect is not a JSON object."""
    row = rows[k]
    what, _, field = kind.partition(":")
    if what == "missing":
        row.pop(field)
    elif what == "null":
        row[field] = None
    elif what == "type":
        value = draw(wrong_type)
        if field in ("question", "chosen", "rejected", "split", "tier", "id"):
            value = draw(st.one_of(st.just(value), st.integers(1, 9)))
        row[field] = value
    elif what == "blank":
        row[field] = draw(blank)
    elif what == "value":
        row[field] = draw(st.sampled_from(["other", "Generals", "mid", "extreme", "EASY"]))
    elif what == "same":
        row["rejected"] = row["chosen"]
    elif what == "duplicate":
        j = draw(st.integers(0, k - 1))
        rows[j]["id"] = row["id"] = f"dup-{draw(st.integers(0, 99))}"
    elif what == "extra":
        row["colour"] = draw(text)
    elif kind == "persona:type":
        row["persona"] = draw(st.one_of(st.lists(st.integers(), max_size=2), st.integers(0, 3), text, blank,
                                        st.booleans()))
    elif kind == "persona:deep":
        row["persona"] = {"Demographics": draw(too_deep)}
    elif kind == "meta:type":
        row["meta"] = draw(st.one_of(st.lists(st.integers(), max_size=2), text, st.integers()))
    elif what == "json":
        good = json.dumps(row).encode()
        return good[: draw(st.integers(1, len(good) - 1))]
    elif what == "not-object":
        return draw(st.sampled_from([b"[1, 2]", b'"text"', b"3", b"null", b"true"]))
    elif what == "encoding":
        return json.dumps({**row, "question": "caf\u00e9 " + row["question"]}, ensure_ascii=False).encode("latin-1",
                                                                                                          "replace")
    return None
