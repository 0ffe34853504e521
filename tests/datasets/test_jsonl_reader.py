"""The one JSONL reader (datasets/rows.py): scored data, plain or gzip-compressed, layout detection, and the run
files gen-eval and build read back all go through it, so a bad line is reported with its file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tailorbench.datasets.rows import InvalidRows, first_jsonl_row, read_jsonl
from tailorbench.datasets.scored import is_scored, read_scored
from tailorbench.errors import DataError
from tailorbench.geneval.generate import read_rows, verdict_key


def _scored_rows() -> list[dict[str, object]]:
    return [{"prompt": f"p{i // 3}", "response": f"r{i}", "helpfulness": i % 3 * 2} for i in range(9)]


def test_scored_gzip_reads_like_plain(tmp_path: Path) -> None:
    text = "\ufeff" + "".join(json.dumps(r) + "\n" for r in _scored_rows())
    plain, packed = tmp_path / "s.jsonl", tmp_path / "s.jsonl.gz"
    plain.write_text(text, encoding="utf-8")
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    assert is_scored(plain) and is_scored(packed, "helpfulness")
    assert first_jsonl_row(packed) == first_jsonl_row(plain) == _scored_rows()[0]
    got_plain, stats_plain = read_scored(plain, InvalidRows())
    got_packed, stats_packed = read_scored(packed, InvalidRows())
    same = [c.model_dump(exclude={"meta"}) | {"gap": c.meta["score_gap"]} for c in got_plain]
    assert same == [c.model_dump(exclude={"meta"}) | {"gap": c.meta["score_gap"]} for c in got_packed] and same
    assert stats_plain == stats_packed


def test_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rows = [json.dumps(r) for r in _scored_rows()[:3]]
    path.write_text("\n".join([rows[0], "{not json", "[1, 2]", rows[1], '{"prompt": "p0", "response": "x"}',
                               rows[2]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_scored(path, InvalidRows())
    assert caught.value.line == 2 and "malformed JSON" in str(caught.value) and str(path) in str(caught.value)
    skipped = InvalidRows(skip=True)
    read_scored(path, skipped)
    assert [(e.line, e.field) for e in skipped.rows] == [(2, None), (3, None), (5, "helpfulness")]
    assert "expected a JSON object, got list" in skipped.rows[1].message
    assert [n for n, _ in read_jsonl(path, InvalidRows(skip=True))] == [1, 4, 5, 6]


def test_detection_reads_one_line_and_never_raises(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n\n\xff\xfe not text\n")
    assert first_jsonl_row(bad) is None and first_jsonl_row(tmp_path / "missing.jsonl") is None
    torn = tmp_path / "torn.jsonl.gz"
    torn.write_bytes(b"not gzip at all")
    assert first_jsonl_row(torn) is None
    with pytest.raises(DataError, match="not a readable gzip file"):
        list(read_jsonl(torn, InvalidRows()))


def test_run_files_read_back_through_the_reader(tmp_path: Path) -> None:
    """gen-eval's rows: a torn last line (kill -9) is cut off; a damaged line is a DataError naming it."""
    path = tmp_path / "verdicts.jsonl"
    path.write_bytes(b'{"case_id": "a", "order": "AB"}\n{"case_id": "b", "order": "AB"}\n{"case_i')
    assert read_rows(path, verdict_key) == [{"case_id": "a", "order": "AB"}, {"case_id": "b", "order": "AB"}]
    assert path.read_bytes().endswith(b'"AB"}\n')
    path.write_bytes(b'{"case_id": "a"}\n{oops}\n')
    with pytest.raises(DataError) as caught:
        read_rows(path, verdict_key)
    assert caught.value.line == 2
