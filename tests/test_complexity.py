"""Small pieces where it is hard: no function or method of src/tailorbench above cyclomatic complexity 30
(radon's count, as `radon cc -s src/tailorbench` prints it) and no module of 500 lines or more. A module that
grows past the limit is split by concern; a function, into the steps it already has.

The checker is shown to catch a planted long, branchy function and a planted long module, both in a string
and in a scratch copy of a real module."""

from __future__ import annotations

import shutil
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "tailorbench"

MAX_COMPLEXITY = 30  # a function above this fails
MAX_LINES = 500  # a module of this many lines or more fails


def _functions(blocks: list[Function | Class]) -> list[Function]:
    """Every function and method radon reports (`cc_visit` lists a class and then its methods; a nested
    class's methods only under it)."""
    found: list[Function] = []
    for block in blocks:
        if isinstance(block, Class):
            for inner in block.inner_classes:
                found += _functions([inner, *inner.methods])
        else:
            found.append(block)
    return found


def problems(text: str, name: str) -> list[str]:
    """What a module's source breaks: each function above MAX_COMPLEXITY, and the module's length."""
    found = []
    lines = len(text.splitlines())
    if lines >= MAX_LINES:
        found.append(f"{name}: {lines} lines (a module holds fewer than {MAX_LINES}: split it by concern)")
    for block in _functions(cc_visit(text)):
        if block.complexity > MAX_COMPLEXITY:
            where = f"{block.classname}.{block.name}" if block.is_method else block.name
            found.append(f"{name}:{block.lineno} {where}: cyclomatic complexity {block.complexity} "
                         f"(at most {MAX_COMPLEXITY}: split it into its steps)")
    return found


def check_tree(root: Path) -> list[str]:
    """The problems of every module under `root`, named relative to it."""
    return [p for path in sorted(root.rglob("*.py"))
            for p in problems(path.read_text(encoding="utf-8"), str(path.relative_to(root)))]


def test_no_function_too_complex_and_no_module_too_long() -> None:
    found = check_tree(PACKAGE)
    assert not found, "\n".join(found)


def _planted(branches: int) -> str:
    """A function with `branches` if/elif arms: complexity branches + 1."""
    arms = "\n".join(f"    {'if' if i == 0 else 'elif'} x == {i}:\n        return {i}" for i in range(branches))
    return f"def planted(x: int) -> int:\n{arms}\n    return -1\n"


def test_the_checker_catches_a_planted_complex_function() -> None:
    assert problems(_planted(29), "ok.py") == []  # complexity 30: allowed
    found = problems(_planted(30), "planted.py")  # complexity 31
    assert found == ["planted.py:1 planted: cyclomatic complexity 31 (at most 30: split it into its steps)"]
    method = "class Planted:\n" + "".join(f"    {line}\n" for line in _planted(40).splitlines())
    assert problems(method, "m.py") == [
        "m.py:2 Planted.planted: cyclomatic complexity 41 (at most 30: split it into its steps)"]


def test_the_checker_catches_a_planted_long_module() -> None:
    assert problems("x = 1\n" * 499, "short.py") == []
    assert problems("x = 1\n" * 500, "long.py") == [
        "long.py: 500 lines (a module holds fewer than 500: split it by concern)"]


def test_the_checker_catches_a_function_planted_in_a_copy_of_the_package(tmp_path: Path) -> None:
    copy = tmp_path / "tailorbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = check_tree(copy)
    target = copy / "errors.py"
    text = target.read_text(encoding="utf-8")
    target.write_text(text + "\n\n" + _planted(45) + "\n" * (MAX_LINES - len(text.splitlines())),
                      encoding="utf-8")
    added = sorted(set(check_tree(copy)) - set(before))
    line = len(text.splitlines()) + 3
    assert added == [f"errors.py: {len(target.read_text().splitlines())} lines "
                     "(a module holds fewer than 500: split it by concern)",
                     f"errors.py:{line} planted: cyclomatic complexity 46 (at most 30: split it into its steps)"]
