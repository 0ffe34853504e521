"""One door for every write and delete (the `files` package; docs/architecture.md "The one door"): an AST walk
over the package finds every call that writes, replaces or removes a path — `open()` in w/a/x mode, `Path.write_*`,
`shutil.copy*`/`move`/`copytree`/`rmtree`, `os.remove`/`unlink`/`replace`/`rename`, library savers given a path —
outside files/. Each is refused unless its path came from the door (a name bound to `out.path()`,
`out.ensure()` or `with out.staged() as d`), or it is on the allow-list below with its reason; an allow-list
entry whose call is gone fails too. And it bites: a `shutil.rmtree` planted in a scratch copy of the package is
found."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.helpers.call_sites import Found, Site, check, door_path, walk

PACKAGE = REPO_ROOT / "src" / "tailorbench"
#: the door itself: the modules of the `files` package
DOOR = frozenset(f"files/{path.name}" for path in (PACKAGE / "files").glob("*.py"))

#: calls that write, replace or remove whatever path they are given
WRITERS = frozenset({
    "shutil.rmtree", "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move",
    "os.remove", "os.unlink", "os.replace", "os.rename", "os.rmdir", "os.removedirs",
    "torch.save", "np.save", "np.savez", "np.savez_compressed", "numpy.save", "numpy.savez",
})
#: methods that write to, or remove, the object they are called on (a Path) or the path they are given (a saver)
METHODS = frozenset({".write_text", ".write_bytes", ".unlink", ".rmdir", ".rename", ".touch"})
SAVERS = frozenset({".save_pretrained", ".to_parquet", ".to_csv", ".save_to_disk", ".to_json"})


def _mode(call: ast.Call, position: int) -> str:
    for keyword in call.keywords:
        if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    if len(call.args) > position and isinstance(call.args[position], ast.Constant):
        return str(call.args[position].value)
    return "r"


def is_write(call: ast.Call, name: str, door: set[str]) -> bool:
    """Whether `call` writes a path that did not come from the door."""
    target: ast.expr | None = call.args[0] if call.args else None
    if name in ("open", "builtins.open"):
        writes = bool(set(_mode(call, 1)) & set("wax+"))
    elif name == ".open":
        writes = bool(set(_mode(call, 0)) & set("wax+"))
        target = call.func.value if isinstance(call.func, ast.Attribute) else None
    elif name in WRITERS or name in SAVERS:
        writes = True
    elif name in METHODS:
        writes = True
        target = call.func.value if isinstance(call.func, ast.Attribute) else None
    else:
        writes = False
    return writes and not (target is not None and door_path(target, door))


#: each write outside files/ that stays, and why (the path is the command's own state, not a user's output)
ALLOWED: dict[Site, str] = {
    ("humanstudy/run.py", "study_lock", ".open"): "the study's own lock file (STUDY_DIR/run.lock), opened for append "
    "only to hold flock: never truncated or rewritten; a directory there is refused first",
}


def find_writes(package: Path) -> list[Found]:
    return list(walk(package, is_write, skip=DOOR))


def test_every_write_goes_through_the_door() -> None:
    problems = check(find_writes(PACKAGE), ALLOWED, "writes a path that did not come from the files door")
    assert not problems, "\n".join(problems)


def test_a_planted_rmtree_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "tailorbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "evaluate" / "compare.py"
    target.write_text(target.read_text(encoding="utf-8")
                      + "\n\ndef tidy(folder):\n    import shutil\n    shutil.rmtree(folder)\n", encoding="utf-8")
    problems = check(find_writes(copy), ALLOWED, "writes a path that did not come from the files door")
    assert "evaluate/compare.py" in "\n".join(problems) and "shutil.rmtree" in "\n".join(problems)


def test_a_path_from_the_door_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "def save(out, model):\n"
        "    with out.staged('model') as folder:\n"
        "        model.save_pretrained(folder)\n"
        "    target = out.path('x.bin')\n"
        "    target.write_bytes(b'')\n"
        "    model.save_pretrained('elsewhere')\n", encoding="utf-8")
    found = find_writes(tmp_path)
    assert [f.site for f in found] == [("m.py", "save", ".save_pretrained")] and found[0].line == 6


def test_a_folder_where_a_file_is_replaced_is_named(tmp_path: Path) -> None:
    """A folder in the place of a file a verb replaces (a hand-made `results.json/` in a run being resumed) is a
    ConfigError naming it, and stays: before, the atomic replace ended in an IsADirectoryError traceback (found
    by tests/fuzz/test_fuzz_cli.py on `eval --resume` and `stages summary`)."""
    import pytest

    from tailorbench.errors import ConfigError
    from tailorbench.files import write_json_atomic

    (tmp_path / "results.json").mkdir()
    (tmp_path / "results.json" / "keep").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="is a directory where this command writes a file"):
        write_json_atomic(tmp_path / "results.json", {})
    assert (tmp_path / "results.json" / "keep").read_text(encoding="utf-8") == "x"
