"""A validator for the JSON-schema subset the pipeline's schemas use (object, array, string, integer, number,
boolean, enum, required, additionalProperties: false, minLength/maxLength, minItems/maxItems).

Why not `jsonschema`: one more dependency for eight keywords; and a server's grammar mode may be missing or
partial, so every output is checked here whatever the server claims. Unknown keywords raise, so a schema can
never silently ask for more than is checked.
"""

from __future__ import annotations

from typing import Any

_KNOWN = {"type", "properties", "required", "additionalProperties", "items", "enum", "minLength", "maxLength",
          "minItems", "maxItems", "description", "title"}
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "number": (int, float),
    "boolean": (bool,),
}


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """All violations, each naming the JSON path; an empty list means valid."""
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"unsupported schema keyword(s) at {path}: {', '.join(sorted(unknown))}")
    errors: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _TYPES[kind]) and not (kind in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return [f"{path}: expected {kind}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) > schema.get("maxLength", len(value)):
            errors.append(f"{path}: longer than {schema['maxLength']} characters")
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: shorter than {schema['minLength']} characters")
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for k, item in enumerate(value):
                errors.extend(validate(item, schema["items"], f"{path}[{k}]"))
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required key {key!r}")
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in props:
                    errors.append(f"{path}: unexpected key {key!r}")
        for key, sub in props.items():
            if key in value:
                errors.extend(validate(value[key], sub, f"{path}.{key}"))
    return errors
