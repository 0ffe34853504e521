"""Personalized RewardBench read from its hub release: `<Subset>/test-00000-of-00001.parquet` files, made here
in the release's schema (nested `profile` and `rubric_aspects` lists of structs), read in row order so the
authors' seed-42 positions (evaluation/pairwise.py `prepare_pairwise_prompts` of Martin-qyma/Personalized-
RewardBench, commit a5c6814d) fall on the rows they drew them for; equal to the same rows as JSONL."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tailorbench.datasets import load_benchmark
from tailorbench.datasets.loader import detect_layout
from tailorbench.errors import DataError


def _row(n: int) -> dict[str, Any]:
    return {"id": f"u{n}", "question": f"How should I plan day {n}?",
            "profile": [{"id": f"p{n}", "category": "Lifestyle", "text": f"I like mornings ({n})."}],
            "rubric_aspects": [{"aspect": "mornings", "evidence": "likes mornings", "reason": "stated"}],
            "narrative": "I wake early.", "category": "Lifestyle",
            "chosen": f"Start at 6am, day {n}.", "rejected": f"Sleep in, day {n}."}


def _parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_release_parquet_in_row_order(tmp_path: Path) -> None:
    rows = [_row(n) for n in range(40)]
    release = tmp_path / "release"
    _parquet(release / "Lifestyle_and_Personal_Development" / "test-00000-of-00001.parquet", rows)
    _parquet(release / "Art_and_Entertainment" / "test-00000-of-00001.parquet", rows[:5])
    assert detect_layout(release) == "personalized-rewardbench"
    bench = load_benchmark(release)
    life = [c for c in bench.cases if c.split == "Lifestyle"]
    assert [c.id for c in life] == [f"Lifestyle/test/u{n}" for n in range(40)]
    random.seed(42)  # prepare_pairwise_prompts: per item in file order, chosen as A when random() < 0.5
    assert [c.meta["authors_order"] for c in life] == ["AB" if random.random() < 0.5 else "BA" for _ in range(40)]
    assert "I like mornings (3)." in life[3].persona["History"]
    assert {c.split for c in bench.cases} == {"Lifestyle", "Art"}
    # the same rows as JSONL give the same cases
    jsonl = tmp_path / "jsonl" / "Lifestyle_and_Personal_Development_test.jsonl"
    jsonl.parent.mkdir()
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [c.model_dump() for c in load_benchmark(jsonl.parent).cases] == [c.model_dump() for c in life]


def test_bad_parquet_row_names_the_row(tmp_path: Path) -> None:
    rows = [_row(0), {**_row(1), "chosen": ""}]
    _parquet(tmp_path / "Society_and_Culture" / "test-00000-of-00001.parquet", rows)
    with pytest.raises(DataError) as error:
        load_benchmark(tmp_path)
    assert (error.value.line, error.value.field) == (2, "chosen")
    assert len(load_benchmark(tmp_path, skip_invalid=True).cases) == 1


def test_unreadable_parquet_is_a_data_error(tmp_path: Path) -> None:
    bad = tmp_path / "Society_and_Culture" / "test-00000-of-00001.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"not parquet")
    with pytest.raises(DataError, match="Parquet"):
        load_benchmark(tmp_path)
