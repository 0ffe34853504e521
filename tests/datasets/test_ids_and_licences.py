"""Values refused where they are read: a control character in a case, user or item id (a report would print it
raw) is exit 2 naming the file, line and field; `data push --license` takes only an identifier the hub accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets.hub_push import HUB_LICENSES, check_license
from tailorbench.errors import ConfigError

ITEMS = Path(__file__).resolve().parents[1] / "annotation" / "data" / "pairwise.jsonl"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def demo_rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    out = tmp_path_factory.mktemp("demo") / "demo.jsonl"
    assert invoke("data", "convert", "demo", "--out", str(out))[0] == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("field", ["id", "user_id"])
@pytest.mark.parametrize("char", ["\x00", "\x1b", "\n", "\x85"])
def test_a_control_character_in_a_case_id_is_refused_where_it_is_read(
        tmp_path: Path, demo_rows: list[dict[str, object]], field: str, char: str) -> None:
    rows = [dict(r) for r in demo_rows]
    rows[2][field] = f"x{char}y"
    data = tmp_path / "bench.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for args in (("data", "check", str(data)),
                 ("eval", "--data", str(data), "--judge", "longer", "--no-progress", "--out", str(tmp_path / "r"))):
        code, err = invoke(*args)
        assert code == 2, err
        assert f"{data}:3: field '{field}': holds the control character U+{ord(char):04X} at position 2" in err, err
        assert char not in err.rstrip("\n")
    assert not (tmp_path / "r").exists()


def test_a_control_character_in_an_item_id_is_refused(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in ITEMS.read_text(encoding="utf-8").splitlines()]
    rows[0]["id"] = "bad\x00id"
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, err = invoke("annotate", "export-items", str(items), "--task", "pairwise", "--format", "label-studio",
                       "--out", str(tmp_path / "project"))
    assert code == 2 and f"{items}:1: field 'id': holds the control character U+0000" in err, err
    assert not (tmp_path / "project").exists()


@pytest.mark.parametrize("given", ["whatever I like", "CC-BY-4", "gpl-4.0", "proprietary"])
def test_an_unknown_licence_is_exit_2_before_any_work(tmp_path: Path, given: str) -> None:
    code, err = invoke("data", "push", "demo", "me/bench", "--license", given, "--dry-run", str(tmp_path / "hub"))
    assert code == 2 and "not a licence identifier the hub accepts" in err and "other" in err, err
    assert not (tmp_path / "hub").exists()


def test_the_hub_identifiers_are_accepted_as_the_hub_writes_them(tmp_path: Path) -> None:
    assert check_license(" CC-BY-NC-SA-4.0 ") == "cc-by-nc-sa-4.0"
    assert {"cc-by-4.0", "mit", "apache-2.0", "odc-by", "other"} <= HUB_LICENSES
    with pytest.raises(ConfigError, match="did you mean cc"):
        check_license("cc-by-5.0")
    code, err = invoke("data", "push", "demo", "me/bench", "--license", "MIT", "--dry-run", str(tmp_path / "hub"))
    assert code == 0, err
    assert "license: mit" in (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
