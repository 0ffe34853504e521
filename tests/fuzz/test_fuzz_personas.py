"""Fuzzing persona handling: normalisation never drops or alters a value, rendering and the attribute
breakdown never raise on any JSON a file can hold, and depth is measured without recursion."""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tailorbench.errors import DataError
from tailorbench.personas import (
    MAX_DEPTH,
    check_persona_depth,
    normalise_persona,
    persona_attributes,
    persona_depth,
    render_persona,
    select_sections,
)
from tests.fuzz.conftest import count, fuzz
from tests.fuzz.gen import SECTION_KEYS, SUB_KEYS, leaf, name, nested

json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=12,
)
any_key = st.one_of(st.sampled_from(SECTION_KEYS + SUB_KEYS), name, st.sampled_from(
    ["DEMOGRAPHICS", "demo_graphics", "Extraversion or Introversion", "judging_or_pereceiving", "Name_2"]))
profiles = st.dictionaries(any_key, st.one_of(leaf, json_value, st.dictionaries(any_key, json_value, max_size=4)),
                           max_size=6)


#: profiles whose keys clash after normalisation (`Bias` and `bias`, nested mappings under both)
_CLASH_KEYS = st.sampled_from(["Bias", "bias", "BIAS", "Preference", "preference"])
_SUB = st.sampled_from(["x", "y", "Food"])
clashing = st.dictionaries(_CLASH_KEYS, st.one_of(leaf, st.dictionaries(_SUB, st.one_of(
    leaf, st.dictionaries(_SUB, leaf, max_size=2)), max_size=3)), min_size=2, max_size=5)


def leaves(value: Any) -> Counter[str]:
    """Every scalar of a value (dict keys are not values), as JSON text."""
    out: Counter[str] = Counter()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        else:
            out[json.dumps(node)] += 1
    return out


@fuzz(1200)
@given(st.one_of(profiles, clashing))
def test_normalising_keeps_every_value_and_rendering_never_raises(profile: dict[str, Any]) -> None:
    count("persona")
    before, original = leaves(profile), copy.deepcopy(profile)
    normalised, renamed = normalise_persona(profile)
    assert profile == original  # the reader's input is never altered
    assert leaves(normalised) == before  # renamed or merged, never dropped
    assert renamed >= 0
    again = normalise_persona(normalised)[0]
    assert leaves(again) == leaves(profile)
    text = render_persona(normalised)
    assert isinstance(text, str)
    for section in ("Demographics", "Preference"):
        assert render_persona(normalised, [section]) == render_persona(select_sections(normalised, [section]))
    attrs = persona_attributes(normalised)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in attrs.items())


@fuzz(200)
@given(st.integers(1, 5000), st.sampled_from(["dict", "list", "mixed"]))
def test_depth_is_measured_without_recursion(depth: int, shape: str) -> None:
    count("persona depth")
    value: Any = nested(depth) if shape == "dict" else 1
    if shape != "dict":
        for level in range(depth):
            value = [value] if shape == "list" or level % 2 else {"k": value}
    assert persona_depth(value, limit=10**6) == depth
    if depth > MAX_DEPTH:
        try:
            check_persona_depth(value, "p.jsonl", 3)
        except DataError as error:
            assert (error.path, error.line, error.field) == ("p.jsonl", 3, "persona")
        else:
            raise AssertionError("too deep a profile was accepted")
    else:
        check_persona_depth(value, "p.jsonl", 3)
