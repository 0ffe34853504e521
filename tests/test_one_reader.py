"""One reader for every user file (files/reading.py; docs/data.md "Reading files"): an AST walk over the package
finds every call that parses a file's content outside files/reading.py and datasets/rows.py (the JSONL reader) —
a YAML loader (`yaml.safe_load`, `yaml.load`, `yaml.safe_load_all`, `yaml.load_all` and the rest), `json.load`,
`csv.reader` / `csv.DictReader`, and `json.loads` / `orjson.loads` of a whole file read in the same expression
(`json.loads(path.read_text())`). Those bypass the bounds the one reader keeps (size, nesting, anchors and
aliases, duplicate keys, CSV field length, UTF-8 named with its line). Each is refused unless it is on the
allow-list below with its reason; an allow-list entry whose call is gone fails too. And it bites: a
`yaml.safe_load` planted in a scratch copy of the package is found."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers.call_sites import Found, Site, check, walk

PACKAGE = REPO_ROOT / "src" / "tailorbench"
#: the reader itself: files/reading.py (YAML, JSON, CSV) and datasets/rows.py (JSONL, a line at a time)
READERS = frozenset({"files/reading.py", "datasets/rows.py"})

#: calls that parse whatever file or stream they are given
PARSERS = frozenset({
    "yaml.load", "yaml.safe_load", "yaml.full_load", "yaml.unsafe_load", "yaml.load_all", "yaml.safe_load_all",
    "yaml.full_load_all", "yaml.unsafe_load_all", "yaml.compose", "yaml.compose_all", "yaml.parse",
    "json.load", "csv.reader", "csv.DictReader",
})
#: methods that read a whole file (`Path.read_text`, `Path.read_bytes`, `open(...).read`)
WHOLE_FILE = frozenset({"read_text", "read_bytes", "read"})


def _reads_a_file(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WHOLE_FILE
            and not (node.func.attr == "read" and isinstance(node.func.value, ast.Name)
                     and node.func.value.id in {"response", "resp", "stream", "sys"}))


def is_parse(call: ast.Call, name: str, door: set[str]) -> bool:
    """Whether `call` parses a file's content outside the one reader."""
    if name in PARSERS:
        return True
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "loads" and isinstance(func.value, ast.Name) \
            and func.value.id in {"json", "orjson"} and call.args:
        return any(_reads_a_file(node) for node in ast.walk(call.args[0]))
    return False


#: each parse outside the reader that stays, and why
ALLOWED: dict[Site, str] = {}


def find_parses(package: Path) -> list[Found]:
    return list(walk(package, is_parse, skip=READERS))


def test_every_user_file_is_read_by_the_one_reader() -> None:
    problems = check(find_parses(PACKAGE), ALLOWED, "parses a file outside the one reader (files/reading.py)")
    assert not problems, "\n".join(problems)


def test_a_planted_yaml_safe_load_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "tailorbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "evaluate" / "compare.py"
    target.write_text(target.read_text(encoding="utf-8")
                      + "\n\ndef settings(path):\n    import yaml\n    return yaml.safe_load(path.read_text())\n",
                      encoding="utf-8")
    problems = "\n".join(check(find_parses(copy), ALLOWED, "parses a file outside the one reader (files/reading.py)"))
    assert "evaluate/compare.py" in problems and "in settings: yaml.safe_load" in problems, problems


@pytest.mark.parametrize("source", [
    "from yaml import safe_load\ndef f(p):\n    return safe_load(open(p))\n",
    "import yaml as y\ndef f(p):\n    return y.load_all(p.read_text(), Loader=y.SafeLoader)\n",
    "import csv\ndef f(h):\n    return list(csv.DictReader(h))\n",
    "import json\ndef f(p):\n    with open(p) as h:\n        return json.load(h)\n",
    "import orjson\ndef f(p):\n    return orjson.loads(p.read_bytes())\n",
    "import json\ndef f(p):\n    return json.loads((p / 'x.json').read_text(encoding='utf-8'))['a']\n",
])
def test_each_kind_of_parse_is_found(tmp_path: Path, source: str) -> None:
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    assert [f.site[:2] for f in find_parses(tmp_path)] == [("m.py", "f")]


def test_parsing_text_that_is_not_a_file_is_not_a_file_read(tmp_path: Path) -> None:
    """A model's answer, a database cell, an HTTP body: text already in memory, not a user's file."""
    (tmp_path / "m.py").write_text("import json\ndef f(response, cell):\n    return json.loads(response.content), "
                                   "json.loads(cell)\n", encoding="utf-8")
    assert find_parses(tmp_path) == []


def test_an_allow_list_entry_whose_call_is_gone_fails() -> None:
    gone: Site = ("evaluate/compare.py", "nowhere", "yaml.safe_load")
    problems = check(find_parses(PACKAGE), {**ALLOWED, gone: "a stale entry"}, "parses a file")
    assert any("no longer exists" in p and "nowhere" in p for p in problems)
