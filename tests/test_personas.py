from __future__ import annotations

from tailorbench.personas import (
    canonical_key,
    cjk_share,
    normalise_persona,
    persona_attributes,
    persona_facts,
    render_persona,
    select_sections,
)
from tests.helpers.pf_data import PERSONA_EN, PERSONA_ZH


def test_canonical_keys_for_real_typos() -> None:
    for typo in ("Extraversion_or_Intraversion", "Extraversion_or_Introverson", "Extraversion_or_Intuition"):
        assert canonical_key(typo, "Personality") == "Extraversion_or_Introversion"
    for typo in ("Judging_or_Pereceiving", "Judging_or_Pereiving", "Judging_or_Pereciving"):
        assert canonical_key(typo, "Personality") == "Judging_or_Perceiving"
    assert canonical_key("bias") == "Bias"
    assert canonical_key("Dream") == "Dream"  # unknown sections kept as found


def test_normalise_never_loses_a_field() -> None:
    profile = {"Bias": {"A": 1}, "bias": {"B": 2, "A": 3}, "Dream": "fly"}
    out, renamed = normalise_persona(profile)
    assert out == {"Bias": {"A": 1, "B": 2, "A_2": 3}, "Dream": "fly"}
    assert renamed == 1


def test_render_and_section_ablation() -> None:
    profile, _ = normalise_persona(PERSONA_EN)
    text = render_persona(profile)
    assert "Career Information: retired teacher" in text
    assert "Values and Interests: birdwatching; history" in text
    only = render_persona(profile, ["demographics", "Preference"])
    assert "retired teacher" in only and "birdwatching" not in only and "slow train" in only
    assert set(select_sections(profile, ["Demographics"])) == {"Demographics"}


def test_facts_and_attributes() -> None:
    profile, _ = normalise_persona(PERSONA_ZH)
    facts = list(persona_facts(profile))
    assert "Personality > Values and Interests: 喜欢枯山水庭院" in facts
    attrs = persona_attributes(profile)
    assert attrs["mbti"] == "INFP" and attrs["age_band"] == "25-34" and attrs["nationality"] == "中国"


def test_cjk_share() -> None:
    assert cjk_share("我该如何练习英语听力") == 1.0
    assert cjk_share("hello world") == 0.0
    assert cjk_share("") == 0.0
