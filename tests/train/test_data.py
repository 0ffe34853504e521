"""Training data rules: repeats removed, label flips resolved, scored data filtered by gap, split by user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import PairCase
from tailorbench.train.config import RMTrainConfig
from tailorbench.train.data import check_disjoint, clean_pairs, load_cases, prepare_data, split_by_user, user_folds
from tests.helpers.rm_models import toy_cases


def _case(i: int, user: str, chosen: str, rejected: str, tier: str = "easy") -> PairCase:
    return PairCase(id=str(i), split="general", tier=tier, user_id=user, question="q", chosen=chosen,
                    rejected=rejected)


def test_repeats_removed_and_flips_by_majority() -> None:
    cases = [_case(0, "u", "a", "b"), _case(1, "u", "a", "b"), _case(2, "u", "b", "a"),  # a>b wins 2:1
             _case(3, "u", "c", "d"), _case(4, "u", "d", "c"),  # a tie: dropped
             _case(5, "v", "a", "b")]  # another user: not a flip
    out, stats = clean_pairs(cases, "majority")
    assert [c.id for c in out] == ["0", "5"]
    assert stats == {"rows_in": 6, "repeated_rows_removed": 1, "rows_in_label_flipped_pairs": 4,
                     "rows_dropped_by_flip_rule": 3, "rows_out": 2}
    assert [c.id for c in clean_pairs(cases, "drop")[0]] == ["5"]
    assert [c.id for c in clean_pairs(cases, "keep")[0]] == ["0", "2", "3", "4", "5"]


def test_flips_by_tier() -> None:
    """`easier` / `harder`: the label of the pair's easiest / hardest tier wins; a tie within that tier drops."""
    cases = [_case(0, "u", "a", "b", "easy"), _case(1, "u", "b", "a", "hard"),
             _case(2, "u", "c", "d", "medium"), _case(3, "u", "d", "c", "hard"),
             _case(4, "u", "c", "d", "hard"),  # a repeat of 2 (removed first); c>d is then medium and hard
             _case(5, "u", "e", "f", "hard"), _case(6, "u", "f", "e", "hard")]  # same tier both ways: dropped
    assert [c.id for c in clean_pairs(cases, "easier")[0]] == ["0", "2"]
    out, stats = clean_pairs(cases, "harder")
    assert [c.id for c in out] == ["1"]
    assert stats["rows_in_label_flipped_pairs"] == 6 and stats["rows_dropped_by_flip_rule"] == 5
    assert [c.id for c in clean_pairs(cases, "majority")[0]] == ["2"]


def test_split_by_user_is_disjoint_and_folds_cover_everyone() -> None:
    cases = toy_cases(n_users=10, per_user=2)
    train, held = split_by_user(cases, 0.3, seed=1)
    assert {c.user_id for c in train}.isdisjoint({c.user_id for c in held})
    assert len({c.user_id for c in held}) == 3 and len(train) + len(held) == len(cases)
    folds = user_folds([c.user_id for c in cases], 3, seed=0)
    assert sorted(u for f in folds for u in f) == sorted({c.user_id for c in cases})
    for k in range(3):
        _, fold_eval = split_by_user(cases, 0.0, seed=0, n_folds=3, fold=k)
        assert {c.user_id for c in fold_eval} == set(folds[k])


def test_user_overlap_is_refused(tmp_path: Path) -> None:
    cases = toy_cases(n_users=3, per_user=2)
    with pytest.raises(ConfigError, match="both the training and the evaluation"):
        check_disjoint(cases[:3], cases[2:])
    from tailorbench.datasets import write_native

    write_native(cases, tmp_path / "train.jsonl")
    write_native(cases[:2], tmp_path / "eval.jsonl")
    cfg = RMTrainConfig(data=str(tmp_path / "train.jsonl"), eval_data=str(tmp_path / "eval.jsonl"), out="x")
    with pytest.raises(ConfigError, match="u0"):
        prepare_data(cfg)


def test_scored_data_filtered_by_gap(tmp_path: Path) -> None:
    scored = [("p1", "great", 4), ("p1", "bad", 1), ("p2", "ok", 3), ("p2", "meh", 1), ("p3", "x", 0), ("p3", "y", 4)]
    rows = [{"prompt": p, "response": r, "helpfulness": s} for p, r, s in scored]
    path = tmp_path / "scored.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cases, stats = load_cases(str(path))
    assert stats["format"] == "scored" and stats["pairs"] == 2 and stats["pairs_with_gap_at_most_2"] == 1
    assert {(c.chosen, c.rejected) for c in cases} == {("great", "bad"), ("y", "x")}
    assert len({c.user_id for c in cases}) == 2  # a prompt stands in for a user
    path.write_text(json.dumps({"prompt": "p", "response": "r", "helpfulness": "high"}) + "\n")
    with pytest.raises(DataError, match=r"scored\.jsonl:1"):
        load_cases(str(path))


def test_pair_case_jsonl_from_the_pipeline(tmp_path: Path) -> None:
    from tailorbench.datasets import write_native

    write_native(toy_cases(n_users=5, per_user=2), tmp_path / "pairs.jsonl")
    cfg = RMTrainConfig(data=str(tmp_path / "pairs.jsonl"), out="x", eval_fraction=0.4)
    train, held, stats = prepare_data(cfg)
    assert stats["load"]["format"] == "benchmark" and stats["train_users"] == 3 and stats["eval_users"] == 2
    assert len(train) == 6 and len(held) == 4
