"""Bad input stops with an error naming file, line and field (exit 2), or is skipped and counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets import load_benchmark
from tailorbench.errors import DataError
from tests.helpers.pf_data import make_mirror, native_row, write_jsonl


def _native(tmp_path: Path, rows: list[object], raw: bytes | None = None) -> Path:
    path = tmp_path / "bench.jsonl"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


GOOD = json.dumps(native_row(id="ok")).encode() + b"\n"

CASES: list[tuple[str, bytes, int, str | None]] = [
    ("malformed json", GOOD + b'{"id": "x", "split": \n', 2, None),
    ("not an object", GOOD + b"[1, 2]\n", 2, None),
    ("missing question", GOOD + json.dumps({k: v for k, v in native_row(id="b").items()
                                             if k != "question"}).encode() + b"\n", 2, "question"),
    ("missing split", GOOD + json.dumps({k: v for k, v in native_row(id="b").items()
                                          if k != "split"}).encode() + b"\n", 2, "split"),
    ("empty chosen", GOOD + json.dumps(native_row(id="b", chosen="  ")).encode() + b"\n", 2, "chosen"),
    ("identical answers", GOOD + json.dumps(native_row(id="b", rejected="A slow train trip.")).encode() + b"\n",
     2, "rejected"),
    ("duplicate id", GOOD + GOOD, 2, "id"),
    ("unknown split", GOOD + json.dumps(native_row(id="b", split="other")).encode() + b"\n", 2, "split"),
    ("unknown tier", GOOD + json.dumps(native_row(id="b", tier="extreme")).encode() + b"\n", 2, "tier"),
    ("wrong encoding", GOOD + json.dumps(native_row(id="b", question="café?"), ensure_ascii=False)
     .encode("latin-1") + b"\n", 2, None),
    ("persona not an object", GOOD + json.dumps(native_row(id="b", persona=[1])).encode() + b"\n", 2, "persona"),
    ("answer not text", GOOD + json.dumps(native_row(id="b", chosen=["a"])).encode() + b"\n", 2, "chosen"),
]


@pytest.mark.parametrize(("name", "raw", "line", "field"), CASES, ids=[c[0] for c in CASES])
def test_native_errors_name_file_line_field(tmp_path: Path, name: str, raw: bytes, line: int,
                                            field: str | None) -> None:
    path = _native(tmp_path, [], raw)
    with pytest.raises(DataError) as info:
        load_benchmark(path)
    err = info.value
    assert err.path == str(path) and err.line == line and err.field == field, str(err)
    assert f"{path}:{line}" in str(err)
    if field:
        assert f"'{field}'" in str(err)


@pytest.mark.parametrize(("name", "raw", "line", "field"), CASES, ids=[c[0] for c in CASES])
def test_skip_invalid_counts_instead(tmp_path: Path, name: str, raw: bytes, line: int, field: str | None) -> None:
    bench = load_benchmark(_native(tmp_path, [], raw), skip_invalid=True)
    assert [c.id for c in bench.cases] == ["ok"]
    stats = bench.stats()
    assert stats["skipped_rows"] == 1
    assert stats["skipped"][0]["line"] == line and stats["skipped"][0]["field"] == field


def test_mirror_unknown_persona_and_missing_user_id(tmp_path: Path) -> None:
    root = make_mirror(tmp_path)
    write_jsonl(root / "general_easy.jsonl", [
        {"user_id": "Tom_x1", "question": "q", "chosen": "a", "reject": "b"},
        {"user_id": "Nobody_00", "question": "q", "chosen": "a", "reject": "b"},
    ])
    with pytest.raises(DataError) as info:
        load_benchmark(root)
    assert info.value.line == 2 and info.value.field == "user_id"
    assert "general_easy.jsonl" in info.value.path and "Nobody_00" in str(info.value)
    write_jsonl(root / "general_easy.jsonl", [{"question": "q", "chosen": "a", "reject": "b"}])
    with pytest.raises(DataError) as info:
        load_benchmark(root)
    assert (info.value.line, info.value.field) == (1, "user_id")


def test_mirror_missing_reject_field(tmp_path: Path) -> None:
    root = make_mirror(tmp_path)
    write_jsonl(root / "general_hard.jsonl", [{"user_id": "Tom_x1", "question": "q", "chosen": "a"}])
    with pytest.raises(DataError) as info:
        load_benchmark(root)
    assert (info.value.line, info.value.field) == (1, "reject")


def test_malformed_persona_file(tmp_path: Path) -> None:
    root = make_mirror(tmp_path)
    (root / "persona_all" / "Tom_x1.json").write_text("{not json", "utf-8")
    with pytest.raises(DataError) as info:
        load_benchmark(root)
    assert info.value.path.endswith("Tom_x1.json") and info.value.line == 1


def test_cli_exit_code_2_and_message(tmp_path: Path) -> None:
    path = _native(tmp_path, [], GOOD + json.dumps(native_row(id="b", chosen="")).encode() + b"\n")
    result = CliRunner().invoke(app, ["data", "check", str(path)])
    assert result.exit_code == 2
    assert f"{path}:2: field 'chosen'" in result.output
    ok = CliRunner().invoke(app, ["data", "check", str(path), "--skip-invalid", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["skipped_rows"] == 1


def test_failed_load_never_damages_existing_native_file(tmp_path: Path) -> None:
    from tailorbench import api

    target = tmp_path / "out.jsonl"
    target.write_text("precious\n", "utf-8")
    bad = _native(tmp_path, [], GOOD + b"{oops\n")
    with pytest.raises(DataError):
        api.convert_data(bad, target)
    assert target.read_text("utf-8") == "precious\n"
