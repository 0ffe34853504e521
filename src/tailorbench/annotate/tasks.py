"""The four task types: how an item is validated on import, how a submitted form becomes a canonical label, how a
label becomes long-format ratings, and how a label is scored against a gold answer.

Canonical means independent of what the annotator saw: answers are stored as A/B (pairwise) or
personalized-vs-generic (A/B rating) even though each assignment shows them in its own recorded random order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tailorbench.agreement.ratings import Label
from tailorbench.personas import render_persona

TaskType = Literal["pairwise", "attributes", "relevance", "ab_rating"]
TASK_TYPES: tuple[TaskType, ...] = ("pairwise", "attributes", "relevance", "ab_rating")
TASK_TITLES: dict[str, str] = {
    "pairwise": "Pairwise choice",
    "attributes": "Attribute judgment",
    "relevance": "Attribute relevance",
    "ab_rating": "A/B rating",
}
JUDGMENTS = ("accepted", "uncertain", "rejected")
#: category order for agreement statistics (weighted kappa, ordinal alpha); None = nominal or integers
AGREEMENT_ORDER: dict[str, list[str] | None] = {
    "pairwise": None,
    "attributes": ["rejected", "uncertain", "accepted"],
    "relevance": None,
    "ab_rating": None,
}
SCALE = (
    (1, "much worse"),
    (2, "worse"),
    (3, "about the same"),
    (4, "better"),
    (5, "much better"),
)
#: separator between item id and attribute key in exported rating items
ATTR_SEP = "::"


class ItemError(ValueError):
    """A field of an imported item is wrong; the importer adds file and line."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class FormError(ValueError):
    """A submitted form is incomplete or invalid (HTTP 422 with the message)."""


def check_task_type(name: str) -> TaskType:
    if name not in TASK_TYPES:
        raise ValueError(f"unknown task type {name!r}; choose one of {', '.join(TASK_TYPES)}")
    return name


# --- import-time validation ------------------------------------------------------------------------


def _text(row: Mapping[str, Any], key: str, required: bool = True) -> str:
    value = row.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ItemError(key, "missing or not a non-empty string")
    return value


def _obj(row: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = row.get(key) or {}
    if not isinstance(value, dict):
        raise ItemError(key, "must be a JSON object")
    return value


def normalise_attributes(value: Any, field: str = "attributes") -> list[dict[str, str]]:
    """`["likes tea", {"id": "diet", "text": "vegetarian"}, {"name": "age", "value": "30s"}]` ->
    `[{"key": "1", "text": "likes tea"}, {"key": "diet", "text": "vegetarian"}, {"key": "3", "text": "age: 30s"}]`.
    Keys name the attribute in exports, so they must be unique within an item."""
    if not isinstance(value, list) or not value:
        raise ItemError(field, "must be a non-empty list of attributes")
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, attr in enumerate(value):
        where = f"{field}[{i}]"
        if isinstance(attr, str):
            key, text = str(i + 1), attr
        elif isinstance(attr, dict):
            key = str(attr.get("id", attr.get("key", i + 1)))
            text = attr.get("text") or attr.get("attribute") or attr.get("name") or ""
            if not isinstance(text, str):
                raise ItemError(where, "attribute text must be a string")
            if attr.get("value") not in (None, ""):
                text = f"{text}: {attr['value']}" if text else str(attr["value"])
        else:
            raise ItemError(where, "must be a string or an object with 'text'")
        if not text.strip():
            raise ItemError(where, "empty attribute")
        if not key.strip() or ATTR_SEP in key:
            raise ItemError(where, f"bad attribute id {key!r} (empty or containing {ATTR_SEP!r})")
        if key in seen:
            raise ItemError(where, f"duplicate attribute id {key!r}")
        seen.add(key)
        out.append({"key": key, "text": text})
    return out


def _conversation(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str) and value.strip():
        return [{"role": "", "content": value}]
    if not isinstance(value, list) or not value:
        raise ItemError("conversation", "must be a non-empty string or list of {role, content} turns")
    turns = []
    for i, turn in enumerate(value):
        if isinstance(turn, str):
            turns.append({"role": "", "content": turn})
            continue
        if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
            raise ItemError(f"conversation[{i}]", "each turn must be a string or {role, content}")
        turns.append({"role": str(turn.get("role", "")), "content": turn["content"]})
    return turns


def _check_gold(task: TaskType, gold: Any, payload: dict[str, Any]) -> Any:
    """Gold answers use the canonical label form of their task (see docs/annotation.md)."""
    if task == "pairwise":
        if gold not in ("A", "B"):
            raise ItemError("gold", "pairwise gold must be 'A' or 'B'")
        return gold
    if not isinstance(gold, dict) or not gold:
        raise ItemError("gold", "must be an object {attribute id: expected label}")
    keys = {a["key"] for a in payload["attributes"]}
    for key, value in gold.items():
        if key not in keys:
            raise ItemError("gold", f"unknown attribute id {key!r}")
        ok = (
            (task == "attributes" and value in JUDGMENTS)
            or (task == "relevance" and isinstance(value, bool))
            or (task == "ab_rating" and isinstance(value, int) and not isinstance(value, bool) and -2 <= value <= 2)
        )
        if not ok:
            raise ItemError("gold", f"bad gold label {value!r} for attribute {key!r}")
    return gold


def item_from_row(task: TaskType, row: Mapping[str, Any]) -> tuple[str, dict[str, Any], Any]:
    """Validate one task-JSONL row -> (item id, payload, gold or None)."""
    item_id = row.get("id")
    if isinstance(item_id, int) and not isinstance(item_id, bool):
        item_id = str(item_id)
    if not isinstance(item_id, str) or not item_id.strip():
        raise ItemError("id", "missing or not a non-empty string")
    meta = _obj(row, "meta")
    payload: dict[str, Any] = {"id": item_id, "meta": meta}
    if task == "pairwise":
        payload.update(
            split=_text(row, "split"),
            user_id=_text(row, "user_id"),
            persona=_obj(row, "persona"),
            question=_text(row, "question"),
            answer_a=_text(row, "answer_a"),
            answer_b=_text(row, "answer_b"),
        )
        if payload["split"] not in ("specific", "general"):
            raise ItemError("split", "must be 'specific' or 'general'")
    elif task == "attributes":
        payload.update(
            user_id=str(row.get("user_id", "")),
            conversation=_conversation(row.get("conversation")),
            attributes=normalise_attributes(row.get("attributes")),
        )
    elif task == "relevance":
        payload.update(
            user_id=str(row.get("user_id", "")),
            prompt=_text(row, "prompt"),
            attributes=normalise_attributes(row.get("attributes")),
        )
    else:
        payload.update(
            user_id=str(row.get("user_id", "")),
            prompt=_text(row, "prompt"),
            generic=_text(row, "generic"),
            personalized=_text(row, "personalized"),
            persona=_obj(row, "persona"),
            attributes=normalise_attributes(row.get("attributes")),
        )
    gold = row.get("gold")
    return item_id, payload, None if gold is None else _check_gold(task, gold, payload)


# --- presentation and submitted forms ---------------------------------------------------------------


def needs_swap(task: str) -> bool:
    """Task types whose two answers are shown in a random order recorded per assignment."""
    return task in ("pairwise", "ab_rating")


def view(task: str, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
    """What the task page shows, answers already in the assignment's order (texts are escaped by Jinja)."""
    swap = bool(layout.get("swap"))
    out: dict[str, Any] = {"attributes": payload.get("attributes", [])}
    persona = payload.get("persona") or {}
    out["persona_text"] = render_persona(persona) if persona else ""
    if task == "pairwise":
        answers = [payload["answer_a"], payload["answer_b"]]
        out.update(question=payload["question"], answers=answers[::-1] if swap else answers)
    elif task == "attributes":
        out.update(conversation=payload["conversation"])
    elif task == "relevance":
        out.update(prompt=payload["prompt"])
    else:
        answers = [payload["generic"], payload["personalized"]]
        out.update(prompt=payload["prompt"], answers=answers[::-1] if swap else answers, scale=SCALE)
    return out


def _one(form: Mapping[str, str], key: str, allowed: tuple[str, ...], what: str) -> str:
    value = (form.get(key) or "").strip()
    if value not in allowed:
        raise FormError(f"{what}: choose one of {', '.join(allowed)}")
    return value


def parse_form(task: str, payload: dict[str, Any], layout: dict[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """A submitted form -> the canonical label value; every field is required except notes and confidence."""
    swap = bool(layout.get("swap"))
    attrs = payload.get("attributes", [])
    if task == "pairwise":
        shown = _one(form, "choice", ("1", "2"), "answer")
        choice = ("A" if shown == "1" else "B") if not swap else ("B" if shown == "1" else "A")
        conf = (form.get("confidence") or "").strip()
        if conf not in ("", "1", "2", "3"):
            raise FormError("confidence must be 1, 2 or 3")
        return {"choice": choice, "confidence": int(conf) if conf else None}
    if task == "attributes":
        judged = {
            a["key"]: {
                "judgment": _one(form, f"j_{a['key']}", JUDGMENTS, f"attribute {a['text']!r}"),
                "note": (form.get(f"n_{a['key']}") or "").strip(),
            }
            for a in attrs
        }
        return {"attributes": judged, "missing": (form.get("missing") or "").strip()}
    if task == "relevance":
        return {
            "relevance": {
                a["key"]: _one(form, f"r_{a['key']}", ("yes", "no"), f"attribute {a['text']!r}") == "yes"
                for a in attrs
            }
        }
    ratings: dict[str, int] = {}
    for a in attrs:
        score = int(_one(form, f"s_{a['key']}", ("1", "2", "3", "4", "5"), f"attribute {a['text']!r}")) - 3
        # the scale rates answer 2 against answer 1; answer 2 is the personalized one unless swapped
        ratings[a["key"]] = -score if swap else score
    return {"ratings": ratings}


# --- export and gold scoring ------------------------------------------------------------------------


def to_ratings(task: str, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Label]]:
    """A canonical label -> (rating item, label) pairs of the long format; attribute tasks give one per
    attribute, named `ITEM::ATTRIBUTE`."""
    if task == "pairwise":
        return [(ext_id, value["choice"])]
    if task == "attributes":
        return [(f"{ext_id}{ATTR_SEP}{k}", v["judgment"]) for k, v in value["attributes"].items()]
    if task == "relevance":
        return [(f"{ext_id}{ATTR_SEP}{k}", bool(v)) for k, v in value["relevance"].items()]
    return [(f"{ext_id}{ATTR_SEP}{k}", int(v)) for k, v in value["ratings"].items()]


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def gold_score(task: str, gold: Any, value: dict[str, Any]) -> float:
    """Share of the gold answer matched (A/B ratings: the direction, better / same / worse, must match)."""
    if task == "pairwise":
        return float(value["choice"] == gold)
    got = dict(to_ratings(task, "", value))
    hits = 0
    for key, expected in gold.items():
        label = got.get(f"{ATTR_SEP}{key}")
        if task == "ab_rating" and isinstance(label, int) and not isinstance(label, bool):
            hits += _sign(label) == _sign(int(expected))
        else:
            hits += label == expected
    return hits / len(gold)
