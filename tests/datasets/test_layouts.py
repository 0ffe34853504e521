"""Every PersonaFeedback layout and quirk loads into the same normalised PairCases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailorbench.datasets import detect_layout, load_benchmark, write_native
from tailorbench.datasets.check import integrity_report
from tailorbench.datasets.pairs import tier_overlap
from tailorbench.datasets.rows import pair_hash
from tests.helpers.pf_data import make_hub, make_mirror, write_jsonl


@pytest.mark.parametrize("numeric", [True, False])
def test_hub_layout_with_numeric_and_name_user_ids(tmp_path: Path, numeric: bool) -> None:
    root = make_hub(tmp_path, numeric_ids=numeric)
    bench = load_benchmark(root)
    assert bench.layout == "hub"
    assert {c.split for c in bench.cases} == {"general", "specific"}  # `spedific` normalised
    assert {c.tier for c in bench.cases} == {"easy", "medium", "hard"}  # `mid` normalised
    first = bench.cases[0]
    assert first.user_id == "xiaoyu_01"
    assert first.id == "general/easy/easy:1"
    assert first.persona["Name"] == "小雨"
    # `reject` and `rejected` both read
    hard = [c for c in bench.cases if c.tier == "hard"]
    assert all(c.rejected for c in hard)
    if numeric:
        assert first.meta["source_user_id"] == 1


def test_mirror_layout_ids_personas_and_unused(tmp_path: Path) -> None:
    bench = load_benchmark(make_mirror(tmp_path))
    assert bench.layout == "mirror"
    assert len(bench.cases) == 18
    ids = [c.id for c in bench.cases]
    assert "general/medium/general_mid:2" in ids
    assert bench.personas_unused == ["Unused_zz"]
    assert bench.stats()["personas_unused"] == 1


def test_misspelt_persona_keys_are_normalised_without_losing_fields(tmp_path: Path) -> None:
    bench = load_benchmark(make_mirror(tmp_path))
    persona = next(c.persona for c in bench.cases if c.user_id == "小雨_2mwC")
    assert persona["Personality"]["Extraversion_or_Introversion"] == "I"
    assert persona["Personality"]["Judging_or_Perceiving"] == "P"
    assert persona["Bias"] == {"Beliefs": "认为城市需要更多绿地"}  # lower-case `bias` kept, canonical name
    assert bench.persona_keys_renamed >= 3


def test_chinese_text_is_kept_verbatim(tmp_path: Path) -> None:
    bench = load_benchmark(make_mirror(tmp_path))
    zh = bench.cases[0]
    assert zh.question.endswith("我该如何练习英语听力？")
    assert "枯山水" not in zh.chosen and "日本庭园" in zh.chosen


def test_repeats_and_label_flips_are_kept_separate_and_counted(tmp_path: Path) -> None:
    root = make_mirror(tmp_path)
    easy = [json.loads(x) for x in (root / "general_easy.jsonl").read_text("utf-8").splitlines()]
    flipped = dict(easy[1], chosen=easy[1]["reject"], reject=easy[1]["chosen"])
    write_jsonl(root / "general_mid.jsonl", [easy[0], flipped])  # a repeat and a flip in another tier
    bench = load_benchmark(root)
    stats = bench.stats()
    assert stats["repeated_rows"] == 1
    assert stats["label_flipped_rows"] == 2  # both rows of the flipped pair
    report = integrity_report(bench)
    assert report["rows_repeated_in_another_tier"] == {"general/easy": 1, "general/medium": 1}
    assert report["rows_contradicted_by_swapped_labels"] == {"general/easy": 1, "general/medium": 1}
    kinds = dict(zip([(c.tier, c.question) for c in bench.cases], tier_overlap(bench.cases)))
    assert kinds["medium", easy[0]["question"]] == "repeated" and kinds["easy", easy[1]["question"]] == "contradicted"
    assert list(kinds.values()).count("unique") == len(bench.cases) - 4
    same = [c for c in bench.cases if c.question == easy[0]["question"]]
    assert len(same) == 2 and {c.tier for c in same} == {"easy", "medium"}
    assert same[0].meta["pair_hash"] == pair_hash(same[0].user_id, same[0].question, same[0].chosen,
                                                  same[0].rejected)


def test_native_roundtrip_and_detection(tmp_path: Path) -> None:
    bench = load_benchmark(make_hub(tmp_path / "hub"))
    out = tmp_path / "native.jsonl"
    assert write_native(bench.cases, out) == 18
    assert detect_layout(out) == "native"
    again = load_benchmark(out)
    assert [c.model_dump() for c in again.cases] == [c.model_dump() for c in bench.cases]
    assert again.fingerprint() == load_benchmark(out).fingerprint() != bench.fingerprint()


def test_native_rows_without_id_get_positional_ids(tmp_path: Path) -> None:
    from tests.helpers.pf_data import native_row

    row = native_row()
    del row["id"]
    path = write_jsonl(tmp_path / "mine.jsonl", [row, native_row(id="x")])
    cases = load_benchmark(path).cases
    assert cases[0].id == "general/easy/mine:1"
    assert cases[1].id == "x"


def test_demo_is_bundled_and_length_balanced() -> None:
    bench = load_benchmark("demo")
    cases = bench.cases
    assert len(cases) >= 60
    assert len({c.user_id for c in cases}) >= 12
    assert {(c.split, c.tier) for c in cases} == {(s, t) for s in ("specific", "general")
                                                   for t in ("easy", "medium", "hard")}
    share = sum(len(c.chosen) > len(c.rejected) for c in cases) / len(cases)
    assert 0.4 <= share <= 0.6
