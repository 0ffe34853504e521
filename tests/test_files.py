"""The files module: the bounded loader of user files (nesting bounded without recursion, top-level and field
types checked, errors naming file, line and field) and the atomic writers (a unique temporary sibling, nothing
left behind on failure); the verbs whose configs go through the loader give exit 2 on hostile YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.errors import ConfigError, DataError
from tailorbench.files import (
    MAX_NESTING,
    check_nesting,
    check_output,
    field_of,
    load_json,
    load_yaml,
    parse_json,
    remove_if_unused,
    write_jsonl_atomic,
    write_text_atomic,
)


def test_json_100000_levels_deep_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError) as error:
        load_json(path)
    assert error.value.path == str(path) and "levels deep" in str(error.value)


def test_json_nested_past_the_bound_names_the_top_level_field(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"ok": 1, "persona": ' + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "}")
    with pytest.raises(DataError) as error:
        load_json(path, dict)
    assert error.value.field == "persona"
    check_nesting([[[]]], path, limit=3)  # the bound is inclusive


@pytest.mark.parametrize(("text", "line", "says"), [
    ('{\n  "a": 1,\n  "b": \n}', 4, "malformed JSON"),
    ("[1, 2]", None, "expected a JSON object, got a list"),
    ("", 1, "malformed JSON"),
])
def test_bad_json_names_the_file_and_line(tmp_path: Path, text: str, line: int | None, says: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(text)
    with pytest.raises(DataError) as error:
        load_json(path, dict, "a JSON object")
    assert (error.value.path, error.value.line) == (str(path), line) and says in str(error.value)


def test_non_utf8_and_missing_files_are_data_errors(tmp_path: Path) -> None:
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"a":\n "caf\xe9"}')
    with pytest.raises(DataError) as error:
        load_json(path)
    assert error.value.line == 2 and "UTF-8" in str(error.value)
    with pytest.raises(DataError, match="no such file"):
        load_json(tmp_path / "nope.json")
    with pytest.raises(DataError, match="is a directory"):
        load_yaml(tmp_path)


def test_yaml_10000_levels_deep_is_a_data_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: 1\nb: " + "[" * 10_000 + "]" * 10_000 + "\n")
    with pytest.raises(DataError) as error:
        load_yaml(path, dict)
    assert error.value.line == 2 and "levels deep" in str(error.value)


def test_bad_yaml_names_the_line_and_the_top_level_type(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\nb: [1, 2\nc: 3\n")
    with pytest.raises(DataError) as error:
        load_yaml(path)
    assert error.value.line is not None and "not readable YAML" in str(error.value)
    path.write_text("- 1\n- 2\n")
    with pytest.raises(DataError, match="expected a config, got a list"):
        load_yaml(path, dict, "a config")


def test_field_of_checks_the_type_and_names_the_field() -> None:
    task = {"annotations": {"x": 1}, "drafts": None, "flag": True}
    with pytest.raises(DataError) as error:
        field_of(task, "annotations", list, "a list", "export.json", None, "[3].")
    assert error.value.field == "[3].annotations" and "got an object" in str(error.value)
    assert field_of(task, "drafts", list, "a list", "export.json", default=()) == ()
    with pytest.raises(DataError, match="got true or false"):
        field_of(task, "flag", int, "an integer", "export.json")


def test_a_jsonl_line_goes_through_the_same_bound(tmp_path: Path) -> None:
    with pytest.raises(DataError) as error:
        parse_json(b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", tmp_path / "x.jsonl", 7)
    assert error.value.line == 7


def test_atomic_writes_leave_no_temporary_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")

    def rows() -> object:
        yield {"a": 1}
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        write_jsonl_atomic(target, rows())  # type: ignore[arg-type]
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    write_text_atomic(tmp_path / "new" / "deeper" / "f.txt", "x")
    assert (tmp_path / "new" / "deeper" / "f.txt").read_text() == "x"


def test_check_output_creates_nothing(tmp_path: Path) -> None:
    before = sorted(tmp_path.rglob("*"))
    check_output("--out", tmp_path / "a" / "b" / "c", directory=True)
    assert sorted(tmp_path.rglob("*")) == before
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("x")
    with pytest.raises(ConfigError, match="did not write"):
        check_output("--out", tmp_path / "full", directory=True)
    assert check_output("--out", tmp_path / "full", directory=True, force=True)
    with pytest.raises(ConfigError, match="also this command's input"):
        check_output("--out", tmp_path / "full" / ".." / "full" / "mine.txt", inputs=[tmp_path / "full" / "mine.txt"])


def test_remove_if_unused_keeps_what_was_there(tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    (made / "run.lock").write_text("1\n")
    remove_if_unused(made, existed=True)
    assert made.exists()
    remove_if_unused(made, existed=False)
    assert not made.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "predictions.jsonl").write_text("{}\n")
    remove_if_unused(kept, existed=False)
    assert (kept / "predictions.jsonl").exists()


def _deep_yaml(key: str) -> str:
    return f"{key}: " + "[" * 10_000 + "]" * 10_000 + "\n"


@pytest.mark.parametrize("verb", ["train-rm", "build"])
def test_a_config_10000_levels_deep_is_exit_2(tmp_path: Path, verb: str) -> None:
    config = tmp_path / "c.yaml"
    if verb == "train-rm":
        config.write_text(f"data: demo\nout: {tmp_path / 'rm'}\n" + _deep_yaml("features"))
        args = ["train-rm", "--config", str(config)]
    else:
        config.write_text("memory: m.jsonl\n" + _deep_yaml("stages"))
        args = ["build", "run", str(config)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and not isinstance(result.exception, RecursionError), result.output
    assert f"{config}:" in result.stderr and "levels deep" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]
