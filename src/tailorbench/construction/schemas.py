"""The JSON schemas of the stage outputs. Every string and list is bounded (maxLength / maxItems), so a
constrained decoder, even a tiny random model, always closes its JSON well within the token budget."""

from __future__ import annotations

from typing import Any

from tailorbench.construction.config import PROFILE_SECTIONS, BuildConfig


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _text(max_chars: int, min_chars: int = 1) -> dict[str, Any]:
    return {"type": "string", "minLength": min_chars, "maxLength": max_chars}


def profile_schema(config: BuildConfig) -> dict[str, Any]:
    p = config.profile
    attribute = _obj({
        "section": {"type": "string", "enum": list(PROFILE_SECTIONS)},
        "key": _text(p.key_chars),
        "value": _text(p.value_chars),
        "evidence": {"type": "array", "maxItems": p.max_evidence, "items": _text(12)},
    })
    return _obj({"attributes": {"type": "array", "minItems": 1, "maxItems": p.max_attributes, "items": attribute}})


def questions_schema(config: BuildConfig) -> dict[str, Any]:
    q = config.questions
    item = _obj({"scene": {"type": "string", "enum": list(q.scenes)}, "question": _text(q.question_chars)})
    return _obj({"questions": {"type": "array", "minItems": 1, "maxItems": q.per_user, "items": item}})


def answer_schema(config: BuildConfig) -> dict[str, Any]:
    return _obj({"answer": _text(config.answers.answer_chars)})
