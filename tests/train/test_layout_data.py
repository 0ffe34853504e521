"""Training data from a benchmark with its own tiers: the flip rules `easier` / `harder` follow the benchmark's
declared difficulty order, and scored data comes through the `scored` layout."""

from __future__ import annotations

import json
from pathlib import Path

from tailorbench.train.config import RMTrainConfig
from tailorbench.train.data import load_cases, prepare_data
from tests.helpers.pf_data import native_row, write_jsonl

DECLARATION = {"splits": ["formal", "casual"], "tiers": ["low", "high"], "difficulty": ["high", "low"]}


def _bench(path: Path, rows: list[dict[str, object]]) -> Path:
    write_jsonl(path, rows)
    path.with_name(path.name.replace(".jsonl", ".layout.json")).write_text(json.dumps(DECLARATION), "utf-8")
    return path


def test_flip_rules_follow_the_declared_difficulty(tmp_path: Path) -> None:
    train = _bench(tmp_path / "train.jsonl", [
        native_row(id="low", split="formal", tier="low", user_id="u", chosen="A", rejected="B"),
        native_row(id="high", split="formal", tier="high", user_id="u", chosen="B", rejected="A"),
    ])
    held = _bench(tmp_path / "eval.jsonl", [native_row(id="e", split="casual", tier="low", user_id="v")])
    cases, stats = load_cases(str(train))
    assert stats["tier_difficulty"] == ["high", "low"] and {c.tier for c in cases} == {"low", "high"}
    for rule, kept in (("easier", "high"), ("harder", "low")):  # `high` is the easiest tier of this benchmark
        cfg = RMTrainConfig(data=str(train), eval_data=str(held), out="x", flip_rule=rule)
        pairs, _, summary = prepare_data(cfg)
        assert [c.id for c in pairs] == [kept], rule
        assert summary["clean"]["rows_in_label_flipped_pairs"] == 2


def test_personafeedback_names_add_no_difficulty_key(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pf.jsonl", [native_row(id="a")])
    assert "tier_difficulty" not in load_cases(str(path))[1]


def test_scored_data_through_the_loader(tmp_path: Path) -> None:
    rows = [{"prompt": "p", "response": r, "score": s} for r, s in (("good", 5), ("poor", 1))]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    cases, stats = load_cases(str(path), "auto", score_column="score")
    assert stats == {"format": "scored", "scored_rows": 2, "prompts": 1, "pairs": 1, "pairs_with_gap_at_most_2": 0}
    assert cases[0].chosen == "good" and cases[0].tier == "easy" and cases[0].split == "general"
