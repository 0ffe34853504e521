"""Stratified seeded sampling and the language-aware explicit-mention detector."""

from __future__ import annotations

from collections import Counter

import pytest

from tailorbench.datasets import load_benchmark
from tailorbench.errors import ConfigError
from tailorbench.geneval.mentions import find_mentions, value_phrases
from tailorbench.geneval.sampling import stratified_sample
from tailorbench.schema import PairCase


def _cases(per_cell: int) -> list[PairCase]:
    return [PairCase(id=f"{s}/{t}/{k}", split=s, tier=t, user_id=f"u{k % 5}", question="q?", chosen="c",
                     rejected="r")
            for s in ("specific", "general") for t in ("easy", "medium", "hard") for k in range(per_cell)]


def test_stratified_sample_is_per_cell_seeded_and_keeps_order() -> None:
    cases = _cases(20)
    sample = stratified_sample(cases, 5, seed=3)
    assert Counter((c.split, c.tier) for c in sample) == {
        (s, t): 5 for s in ("specific", "general") for t in ("easy", "medium", "hard")}
    positions = [cases.index(c) for c in sample]
    assert positions == sorted(positions)
    assert [c.id for c in stratified_sample(cases, 5, seed=3)] == [c.id for c in sample]
    assert [c.id for c in stratified_sample(cases, 5, seed=4)] != [c.id for c in sample]
    # a cell's sample does not depend on the other cells
    only_easy = [c for c in cases if c.tier == "easy"]
    assert [c.id for c in stratified_sample(only_easy, 5, seed=3)] == [c.id for c in sample if c.tier == "easy"]
    # small cells are taken whole; None keeps everything
    assert len(stratified_sample(_cases(3), 5, seed=0)) == 18
    assert stratified_sample(cases, None, seed=0) == cases
    with pytest.raises(ConfigError):
        stratified_sample(cases, 0, seed=0)


def test_demo_sample() -> None:
    cases = load_benchmark("demo").cases
    assert Counter((c.split, c.tier) for c in stratified_sample(cases, 2, seed=0)) == {
        (s, t): 2 for s in ("specific", "general") for t in ("easy", "medium", "hard")}


EN_PERSONA = {
    "Name": "Maya Koh",
    "Demographics": {"Age": 29, "Gender": "Female", "Nationality": "Singaporean",
                     "Career_Information": "UX designer at a Singapore software company"},
    "Personality": {"Extraversion_or_Introversion": "I", "Values_and_Interests": ["bouldering", "indie films"]},
    "Preference": {"Food_Drinks": "Vegetarian; cooks simple Asian dishes at home",
                   "Travel": "Small hostels, walkable neighbourhoods, avoids crowds"},
}
ZH_PERSONA = {
    "Name": "王小明",
    "Demographics": {"Age": "32岁", "Gender": "男", "Nationality": "中国",
                     "Career_Information": "上海一家互联网公司的后端工程师"},
    "Preference": {"Food": "喜欢川菜、火锅；不吃香菜", "Hobby": ["篮球", "摄影"]},
}


def _values(answer: str, persona: dict[str, object]) -> set[str]:
    return {m["value"] for m in find_mentions(answer, value_phrases(persona))}


def test_english_mentions() -> None:
    answer = ("Hi Maya! Since you avoid crowds, go bouldering early on Saturday, then cook a vegetarian stir-fry "
              "and watch two indie films. Pick small hostels if you travel.")
    assert _values(answer, EN_PERSONA) == {"Maya Koh", "avoids crowds", "bouldering", "Vegetarian", "indie films",
                                           "Small hostels"}
    # case, plural and punctuation do not matter; single MBTI letters and ages never count
    assert _values("INDIE FILM night, for a 29 year old I", EN_PERSONA) == {"indie films"}
    # a generic answer names nothing; a word shared by chance with a long value is not a mention
    assert _values("Rest, sleep well and take a walk in the park.", EN_PERSONA) == set()
    assert _values("Try a simple plan for the weekend.", EN_PERSONA) == set()
    # a long value matches on two consecutive content words
    assert _values("Your software company may offer a wellness day.", EN_PERSONA) == {
        "UX designer at a Singapore software company"}


def test_chinese_mentions() -> None:
    answer = "小明，周末可以去打篮球，晚上约朋友吃火锅。作为互联网公司的工程师，记得多休息。"
    assert _values(answer, ZH_PERSONA) == {"王小明", "篮球", "火锅", "上海一家互联网公司的后端工程师"}
    assert _values("我推荐你吃川菜，也可以试试摄影。", ZH_PERSONA) == {"喜欢川菜", "摄影"}
    # one shared character is not a mention; single-character values (男) are never matched
    assert _values("周末好好休息，男生女生都适合散步。", ZH_PERSONA) == set()
    # Latin values are found in a Chinese answer and CJK values in an English one
    mixed = {"Preference": {"Tools": ["Notion"], "Food": "火锅"}}
    assert _values("可以用Notion做计划。", mixed) == {"Notion"}
    assert _values("Try 火锅 tonight", mixed) == {"火锅"}
