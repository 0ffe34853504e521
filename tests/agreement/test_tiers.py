"""Tiering pairwise annotations into PairCase records."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tailorbench.agreement.ratings import read_ratings
from tailorbench.agreement.tiers import TierRule, build_tiers, write_cases
from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import PairCase

Writer = Callable[[str, list[dict[str, Any]]], Path]


def _item(i: int) -> dict[str, Any]:
    return {
        "id": f"p{i}",
        "split": "general",
        "user_id": "u1",
        "persona": {"job": "gardener"},
        "question": f"问题 {i}",
        "answer_a": f"answer A{i}",
        "answer_b": f"answer B{i}",
    }


def _votes(item: str, a: int, b: int) -> list[dict[str, Any]]:
    labels = ["A"] * a + ["B"] * b
    return [{"item": item, "rater": f"h{j}", "label": lab} for j, lab in enumerate(labels)]


def test_default_rule_maps_nine_annotators() -> None:
    rule = TierRule()
    p = {m: (m * (m - 1) + (9 - m) * (8 - m)) / 72 for m in range(5, 10)}
    assert [rule.tier(p[m]) for m in (9, 8, 7, 6, 5)] == ["easy", "easy", "medium", "hard", "hard"]


def test_build_tiers(write_jsonl: Writer, tmp_path: Path) -> None:
    items = write_jsonl("items.jsonl", [_item(i) for i in range(6)])
    rows = _votes("p0", 9, 0) + _votes("p1", 1, 8) + _votes("p2", 7, 2) + _votes("p3", 4, 5)
    rows += _votes("p4", 1, 1) + _votes("ghost", 3, 0)  # p4 has too few ratings; p5 none
    cases, summary = build_tiers(items, read_ratings([write_jsonl("r.jsonl", rows)]), n_resamples=200)
    by_id = {c.id: c for c in cases}
    assert by_id["p0"].tier == "easy" and by_id["p0"].chosen == "answer A0"
    assert by_id["p1"].tier == "easy" and by_id["p1"].chosen == "answer B1"
    assert by_id["p2"].tier == "medium" and by_id["p3"].tier == "hard"
    assert by_id["p3"].meta["annotation"]["votes"] == {"A": 4, "B": 5}
    assert summary["skipped_items"] == {"fewer than 3 ratings": 1, "no ratings": 1}
    assert summary["ratings_for_unknown_items"] == 3
    assert summary["tiers"]["easy"]["n"] == 2
    out = tmp_path / "bench.jsonl"
    write_cases(cases, out)
    back = [PairCase.model_validate_json(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert back == cases


def test_ties_skipped_and_bad_labels_refused(write_jsonl: Writer) -> None:
    items = write_jsonl("items.jsonl", [_item(0)])
    _, summary = build_tiers(items, read_ratings([write_jsonl("t.jsonl", _votes("p0", 2, 2))]))
    assert summary["skipped_items"] == {"tie (no majority)": 1}
    bad = write_jsonl("b.jsonl", [{"item": "p0", "rater": "h", "label": "C"}])
    with pytest.raises(DataError) as err:
        build_tiers(items, read_ratings([bad]))
    assert (err.value.line, err.value.field) == (1, "label")


def test_bad_items_and_rule(write_jsonl: Writer) -> None:
    row = _item(0) | {"split": "other"}
    items = write_jsonl("items.jsonl", [_item(1), row])
    with pytest.raises(DataError) as err:
        build_tiers(items, read_ratings([write_jsonl("r.jsonl", _votes("p0", 3, 0))]))
    assert (err.value.line, err.value.field) == (2, "split")
    with pytest.raises(ConfigError):
        TierRule(easy=0.5, medium=0.7)
