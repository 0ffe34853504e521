"""The one reader's rules (files.py "reading"; docs/data.md "Reading files"): a file read whole is refused past
MAX_FILE_BYTES from its size, before it is read; YAML has no anchors or aliases and no key twice in a mapping;
CSV is UTF-8 (a bad byte named with its line) and its fields are bounded by MAX_CSV_FIELD, named with line and
column; counts read from text are digits only. Each case failed at 97f6c24, the commit before these rules: the
alias bomb ran out of memory, a 300 MB study.yaml ran for minutes, a repeated key kept its last value silently,
a CSV field over 131,072 characters or a latin-1 CSV in `tailor agree` was a traceback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.errors import DataError
from tailorbench.files import (
    MAX_CSV_FIELD,
    MAX_FILE_BYTES,
    duplicate_key,
    load_json,
    load_yaml,
    parse_count,
    read_csv,
)

#: nine lines, each list nine times the one before: 9**9 (387 million) strings once expanded
ALIAS_BOMB = "".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    + [f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")])


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk space and no time to make (a hole)."""
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def test_the_alias_bomb_is_refused_at_its_first_anchor_at_once(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(ALIAS_BOMB)
    assert ALIAS_BOMB.count("\n") == 9
    start = time.monotonic()
    with pytest.raises(DataError) as error:
        load_yaml(path, dict)
    assert time.monotonic() - start < 1.0
    assert error.value.line == 1 and "anchor (&a)" in error.value.message


@pytest.mark.parametrize(("text", "line", "says"), [
    ("x: 1\ny: *x\n", 2, "alias (*x)"),
    ("base: &b {k: 1}\n", 1, "anchor (&b)"),
    ("a:\n  - &item 1\n", 2, "anchor (&item)"),
])
def test_anchors_and_aliases_are_refused_naming_the_line(tmp_path: Path, text: str, line: int, says: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(DataError) as error:
        load_yaml(path)
    assert error.value.line == line and says in error.value.message


def test_a_repeated_key_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: a\nstages:\n  relevance: {n: 3}\n  extraction: {n: 2}\n  relevance: {n: 5}\n")
    with pytest.raises(DataError) as error:
        load_yaml(path, dict)
    assert (error.value.line, error.value.field) == (5, "relevance") and "first on line 3" in error.value.message
    path.write_text("a: {n: 1, n: 2}\n")
    with pytest.raises(DataError, match="duplicate key"):
        load_yaml(path)
    path.write_text("a: 1\nb: {a: 1}\n")  # the same key in two mappings is fine
    assert load_yaml(path) == {"a": 1, "b": {"a": 1}}


def test_a_file_past_the_size_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    for name in ("big.yaml", "big.json"):
        path = _sparse(tmp_path / name, 300 * 1024 * 1024)
        start = time.monotonic()
        with pytest.raises(DataError) as error:
            (load_yaml if name.endswith("yaml") else load_json)(path)
        assert time.monotonic() - start < 1.0
        assert "MAX_FILE_BYTES" in error.value.message and f"{MAX_FILE_BYTES:,}" in error.value.message
    path = _sparse(tmp_path / "edge.json", MAX_FILE_BYTES)  # the bound itself is allowed (then: not JSON)
    with pytest.raises(DataError, match="malformed JSON"):
        load_json(path)


def test_a_device_without_end_is_read_no_further_than_the_bound(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(DataError, match="MAX_FILE_BYTES"):
        load_yaml(Path("/dev/zero"))


def test_csv_fields_are_bounded_and_named(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    long = "y" * 200_000  # past the csv module's 131,072: read
    path.write_text(f'a,b\n1,"{long}"\n\n2,"two\nlines"\n3,{"z" * (MAX_CSV_FIELD + 1)}\n4,4,4\n5\n')
    errors: list[DataError] = []
    rows = list(read_csv(path, "a table", ("a", "b"), errors.append))
    assert rows == [(2, {"a": "1", "b": long}), (4, {"a": "2", "b": "two\nlines"}), (8, {"a": "5"})]
    assert [(e.line, e.field) for e in errors] == [(6, "b"), (7, None)]
    assert "MAX_CSV_FIELD" in errors[0].message and "more than the header's 2 columns" in errors[1].message
    with pytest.raises(DataError) as error:
        list(read_csv(path, "a table"))
    assert (error.value.line, error.value.field) == (6, "b")
    with pytest.raises(DataError) as error:
        list(read_csv(path, "a table", ("a", "c")))
    assert (error.value.line, error.value.field) == (1, "c")


def test_csv_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(b"a,b\n1,x\n2,caf\xe9\n")
    with pytest.raises(DataError) as error:
        list(read_csv(path, "a table"))
    assert error.value.line == 3 and "not UTF-8" in error.value.message


@pytest.mark.parametrize("text", ["1_0", "-5", "+3", "", " ", "1.0", "\u0663", "0x1"])
def test_a_count_is_ascii_digits(text: str) -> None:
    with pytest.raises(DataError) as error:
        parse_count(text, "q.csv", 4, "end")
    assert (error.value.line, error.value.field) == (4, "end")


def test_a_count_may_be_padded() -> None:
    assert parse_count(" 12 ", "q.csv", 1, "n") == 12 and parse_count("0", "q.csv", 1, "n") == 0


def _ratings_csv(path: Path, extra: str = "") -> Path:
    rows = "".join(f"i{i},{r},{'yes' if (i + j) % 3 else 'no'}\n" for i in range(6) for j, r in enumerate("ab"))
    path.write_text("item,rater,label\n" + rows + extra, encoding="utf-8")
    return path


def test_agree_reads_a_latin1_csv_as_exit_2_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(_ratings_csv(path).read_bytes() + b"i9,a,caf\xe9\ni9,b,yes\n")
    result = CliRunner().invoke(app, ["agree", str(path), "--n-boot", "10"])
    assert result.exit_code == 2 and f"{path}:14: not UTF-8" in result.output and "Traceback" not in result.output


def test_agree_reads_a_long_field_and_bounds_a_longer_one(tmp_path: Path) -> None:
    path = _ratings_csv(tmp_path / "long.csv", f"i9,a,{'x' * 200_000}\ni9,b,yes\n")
    assert CliRunner().invoke(app, ["agree", str(path), "--n-boot", "10"]).exit_code == 0
    path = _ratings_csv(tmp_path / "huge.csv", f"i9,a,{'x' * (MAX_CSV_FIELD + 1)}\ni9,b,yes\n")
    result = CliRunner().invoke(app, ["agree", str(path), "--n-boot", "10"])
    assert result.exit_code == 2 and f"{path}:14: field 'label'" in result.output


def test_agree_labels_read_as_integers_only_when_written_as_integers(tmp_path: Path) -> None:
    from tailorbench.agreement.ratings import read_ratings_file

    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\ni1,a,1_0\ni1,b,-1\n")
    assert [r.label for r in read_ratings_file(path).ratings] == ["1_0", -1]



@pytest.mark.parametrize(("raw", "key"), [
    (b'{"a": 1, "a": 2}', "a"),
    (b'{"a": 1, "a" : 2}', "a"),  # a space before the colon
    (b'{"x": {"b": 1, "b": 2}}', "b"),
    (b'{"a":1,"b":[{"c":2,"c":3}]}', "c"),
    (b'{"a": "\\u0022: x", "a": 1}', "a"),  # a quote spelt \u0022 followed by a colon, in a string
    (b'{"a": "t\\": x", "b": 1}', None),  # a quote and a colon inside a string
    (b'{"a": "x:y", "b": "z", "c": "12:30"}', None),
    (b'{"\\u4e2d": 1, "\\u4e2d": 2}', "\u4e2d"),
])
def test_a_repeated_json_key_is_found_exactly(raw: bytes, key: str | None) -> None:
    import orjson

    assert duplicate_key(raw, orjson.loads(raw)) == key


def test_a_repeated_key_in_json_and_jsonl_is_an_error_naming_it(tmp_path: Path) -> None:
    """json and orjson keep the last of two equal keys silently (97f6c24: `{"label": 1, "label": 0}` read as 0)."""
    from tailorbench.datasets.rows import InvalidRows, read_jsonl

    path = tmp_path / "export.json"
    path.write_text('[{"id": 1, "label": "yes", "label": "no"}]')
    with pytest.raises(DataError) as error:
        load_json(path, list)
    assert error.value.field == "label" and "duplicate key" in error.value.message
    path = tmp_path / "ratings.jsonl"
    path.write_text('{"item": "i1", "rater": "a", "label": 1}\n{"item": "i1", "rater": "b", "label": 1, "label": 0}\n')
    with pytest.raises(DataError) as error:
        list(read_jsonl(path, InvalidRows()))
    assert (error.value.line, error.value.field) == (2, "label")
    result = CliRunner().invoke(app, ["agree", str(path), "--n-boot", "10"])
    assert result.exit_code == 2 and f"{path}:2: field 'label': duplicate key" in result.output


def test_a_csv_header_naming_a_column_twice_is_an_error(tmp_path: Path) -> None:
    """`item,rater,label,label`: the csv module keeps the last cell of the two under one key, so which label was
    meant is unknown; the reader names the column (found by the CLI fuzz walk on `tailor agree`, exit 0 at
    97f6c24)."""
    from tailorbench.files import read_csv

    path = tmp_path / "ratings.csv"
    path.write_text("item,rater,label,label\ni1,r1,A,B\n", encoding="utf-8")
    with pytest.raises(DataError) as error:
        list(read_csv(path, "ratings"))
    assert error.value.line == 1 and error.value.field == "label" and "twice" in str(error.value)
