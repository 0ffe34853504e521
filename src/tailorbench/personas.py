"""Persona handling shared by every judge and pipeline stage: lenient key normalisation, rendering, section
selection (the field ablation), flattening into facts, and the attributes used in breakdowns.

The real PersonaFeedback profiles carry misspelt keys (`Extraversion_or_Intraversion`,
`Judging_or_Pereceiving`, lower-case `bias`); we map them to canonical names and never drop a field: a key
we cannot map is kept as found.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

#: canonical top-level sections, matched case-insensitively
SECTIONS: tuple[str, ...] = ("Name", "Demographics", "Personality", "Preference", "Bias", "Pattern")

#: MBTI dimensions, matched by the prefix of a normalised key (robust to the typos seen in the data)
_MBTI_PREFIXES: tuple[tuple[str, str], ...] = (
    ("extraversion", "Extraversion_or_Introversion"),
    ("introversion", "Extraversion_or_Introversion"),
    ("sensing", "Sensing_or_Intuition"),
    ("thinking", "Thinking_or_Feeling"),
    ("judging", "Judging_or_Perceiving"),
)
MBTI_KEYS: tuple[str, ...] = (
    "Extraversion_or_Introversion",
    "Sensing_or_Intuition",
    "Thinking_or_Feeling",
    "Judging_or_Perceiving",
)


def _squash(key: str) -> str:
    return re.sub(r"[^0-9a-z]", "", key.lower())


def canonical_key(key: str, parent: str | None = None) -> str:
    """Canonical spelling of a persona key; unknown keys come back unchanged."""
    squashed = _squash(key)
    if parent is None:
        for section in SECTIONS:
            if squashed == section.lower():
                return section
        return key
    if parent == "Personality":
        for prefix, canonical in _MBTI_PREFIXES:
            if squashed.startswith(prefix):
                return canonical
    return key


def _merge(target: dict[str, Any], key: str, value: Any) -> None:
    """Insert without losing data: on a clash of two mappings merge them, otherwise keep both values."""
    if key not in target:
        target[key] = value
    elif isinstance(target[key], dict) and isinstance(value, dict):
        merged = dict(target[key])  # a copy: the caller's nested mappings are never altered
        for sub_key, sub_value in value.items():
            _merge(merged, sub_key, sub_value)
        target[key] = merged
    else:
        suffix = 2
        while f"{key}_{suffix}" in target:
            suffix += 1
        target[f"{key}_{suffix}"] = value


#: deepest nesting a profile may have (sections, keys, lists): real profiles use 3; deeper is a broken file
MAX_DEPTH = 32


def persona_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a profile (a flat mapping is 1), counted without recursion and stopping past `limit`,
    so a file nested 100,000 levels deep is an error message, never a RecursionError."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def check_persona_depth(profile: Any, path: Any, line: int | None, field: str = "persona") -> None:
    """A DataError naming file, line and field when a profile is nested deeper than MAX_DEPTH."""
    if persona_depth(profile) > MAX_DEPTH:
        from tailorbench.errors import DataError

        raise DataError(path, line, field, f"nested more than {MAX_DEPTH} levels deep: not a persona profile")


def normalise_persona(profile: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Return (normalised profile, number of keys renamed). Values are never altered."""
    renamed = 0
    out: dict[str, Any] = {}
    for key, value in profile.items():
        top = canonical_key(key)
        renamed += top != key
        if isinstance(value, dict):
            section: dict[str, Any] = {}
            for sub_key, sub_value in value.items():
                canon = canonical_key(sub_key, parent=top)
                renamed += canon != sub_key
                _merge(section, canon, sub_value)
            value = section
        _merge(out, top, value)
    return out, renamed


def select_sections(profile: dict[str, Any], sections: Sequence[str] | None) -> dict[str, Any]:
    """Keep only the named top-level sections (case-insensitive, canonical names); None keeps all."""
    if not sections:
        return profile
    wanted = {canonical_key(s.strip()) for s in sections if s.strip()}
    return {k: v for k, v in profile.items() if k in wanted}


def _label(key: str) -> str:
    return key.replace("_", " ")


def _scalar(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(_scalar(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{_label(k)}: {_scalar(v)}" for k, v in value.items())
    return str(value)


def render_persona(profile: dict[str, Any], sections: Sequence[str] | None = None) -> str:
    """Render a profile as indented `Key: value` lines: the one text form every judge and agent sees."""
    lines: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        for key, value in node.items():
            pad = "  " * depth
            if isinstance(value, dict):
                lines.append(f"{pad}{_label(key)}:")
                walk(value, depth + 1)
            else:
                lines.append(f"{pad}{_label(key)}: {_scalar(value)}")

    walk(select_sections(profile, sections), 0)
    return "\n".join(lines)


def persona_facts(profile: dict[str, Any]) -> Iterator[str]:
    """Each leaf of the profile as one self-contained fact (`Section > Key: value`), list items separately.
    Used as the retrieval corpus when a benchmark carries a profile but no memory."""

    def walk(node: Any, path: tuple[str, ...]) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                yield from walk(value, (*path, _label(key)))
        elif isinstance(node, list) and node and all(not isinstance(v, (dict, list)) for v in node):
            for item in node:
                yield f"{' > '.join(path)}: {item}"
        else:
            yield f"{' > '.join(path)}: {_scalar(node)}"

    yield from walk(profile, ())


def _age_band(age: Any) -> str | None:
    try:
        years = int(str(age).strip().split()[0].rstrip("岁"))
    except (ValueError, IndexError):
        return None
    for upper, band in ((25, "<25"), (35, "25-34"), (45, "35-44"), (55, "45-54")):
        if years < upper:
            return band
    return "55+"


def persona_attributes(profile: dict[str, Any]) -> dict[str, str]:
    """Attributes used to break accuracy down by persona: nationality, age band, gender, MBTI letters."""
    attrs: dict[str, str] = {}
    demo = profile.get("Demographics")
    if isinstance(demo, dict):
        if demo.get("Nationality") not in (None, ""):
            attrs["nationality"] = str(demo["Nationality"])
        if demo.get("Gender") not in (None, ""):
            attrs["gender"] = str(demo["Gender"])
        band = _age_band(demo.get("Age"))
        if band:
            attrs["age_band"] = band
    personality = profile.get("Personality")
    if isinstance(personality, dict):
        letters = [str(personality.get(k, "")).strip()[:1].upper() for k in MBTI_KEYS]
        if all(letters):
            attrs["mbti"] = "".join(letters)
        for key, letter in zip(("mbti_EI", "mbti_SN", "mbti_TF", "mbti_JP"), letters):
            if letter:
                attrs[key] = letter
    return attrs


_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_SPACE_RUN = re.compile(r"\s+")


def cjk_share(text: str) -> float:
    """Share of non-space characters that are CJK: decides prompt language and warns English-only models."""
    visible = len(text) - sum(map(len, _SPACE_RUN.findall(text)))
    if visible <= 0:
        return 0.0
    return sum(map(len, _CJK_RUN.findall(text))) / visible
