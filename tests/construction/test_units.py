"""Pieces of the pipeline without a model: the schema validator, masking, JSON parsing, stage bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailorbench.construction.calls import assemble_persona, mask_persona
from tailorbench.construction.config import BuildConfig
from tailorbench.construction.jsonschema_lite import validate
from tailorbench.construction.schemas import answer_schema, profile_schema, questions_schema
from tailorbench.construction.structured import StageStats, parse_json, response_format

CONFIG = BuildConfig(model="openai:m@http://127.0.0.1:1/v1", memory=Path("m"), out=Path("o"))
PERSONA = {"Demographics": {"Age": "34", "Gender": "m"}, "Preference": {"Food": "veg", "Music": "jazz"}}


def _bounded(schema: dict[str, object]) -> bool:
    """Every string has maxLength and every array maxItems, recursively."""
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema and "maxLength" not in schema:
        return False
    if kind == "array" and ("maxItems" not in schema or not _bounded(schema["items"])):  # type: ignore[arg-type]
        return False
    props = schema.get("properties", {})
    return all(_bounded(v) for v in props.values())  # type: ignore[attr-defined]


def test_schemas_bound_every_string_and_list() -> None:
    for schema in (profile_schema(CONFIG), questions_schema(CONFIG), answer_schema(CONFIG)):
        assert _bounded(schema)


def test_validator() -> None:
    schema = questions_schema(BuildConfig(model="openai:m", memory=Path("m"), out=Path("o"),
                                          questions={"scenes": ["a"], "per_user": 1,
                                                     "question_chars": 10}))
    assert validate({"questions": [{"scene": "a", "question": "why?"}]}, schema) == []
    errors = validate({"questions": [{"scene": "b", "question": "x" * 11}, {}], "more": 1}, schema)
    assert errors == ["$: unexpected key 'more'", "$.questions: more than 1 items",
                      "$.questions[0].scene: 'b' is not one of ['a']",
                      "$.questions[0].question: longer than 10 characters",
                      "$.questions[1]: missing required key 'scene'", "$.questions[1]: missing required key 'question'"]
    assert validate(True, {"type": "integer"}) == ["$: expected integer, got bool"]
    with pytest.raises(ValueError, match="pattern"):
        validate("x", {"type": "string", "pattern": "x"})


def test_masking_is_seeded_and_partial() -> None:
    masked, hidden = mask_persona(CONFIG, "u1", PERSONA)
    assert (masked, hidden) == mask_persona(CONFIG, "u1", PERSONA) and len(hidden) == 2
    leaves = {f"{s} > {k}" for s, node in masked.items() for k in node}
    assert leaves.isdisjoint(hidden) and len(leaves) == 2
    by_section = CONFIG.model_copy(update={"answers": CONFIG.answers.model_copy(
        update={"mask": CONFIG.answers.mask.model_copy(update={"sections": ["preference"], "share": None})})})
    masked, hidden = mask_persona(by_section, "u1", PERSONA)
    assert masked == {"Demographics": PERSONA["Demographics"]} and hidden == ["Preference > Food", "Preference > Music"]


def test_assemble_persona_traces_evidence() -> None:
    stats = StageStats()
    attrs = [{"section": "Preference", "key": "Food", "value": "veg", "evidence": ["m1", "m9"]},
             {"section": "Preference", "key": "Food", "value": "tea", "evidence": []},
             {"section": "Demographics", "key": " ", "value": "x", "evidence": []}]
    persona, evidence = assemble_persona(attrs, {"m1": "c1:0"}, stats)
    assert persona == {"Preference": {"Food": "veg", "Food_2": "tea"}}
    assert evidence == {"Preference > Food": ["c1:0"], "Preference > Food_2": []}
    assert stats.notes == {"unknown_evidence_refs": 1, "attributes_without_evidence": 1, "blank_attributes_dropped": 1}


def test_parse_and_response_format() -> None:
    assert parse_json('```json\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ValueError):
        parse_json("Hello there")
    schema = answer_schema(CONFIG)
    assert response_format("llama_cpp", "answer", schema) == (("response_format",
                                                              {"type": "json_object", "schema": schema}),)
    assert response_format("json_schema", "answer", schema)[0][1]["json_schema"]["strict"] is True
    assert response_format("none", "answer", schema) == ()
