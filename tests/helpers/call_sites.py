"""Call sites of the package, found on its syntax tree: the standing checks that every write goes through the one
door (the `files` package) and every user file through the one reader are AST walks over `src/tailorbench`, like
the layer contracts over its imports.

A site is (module path, enclosing function, call), e.g. `("humanstudy/run.py", "Runner.step", "shutil.rmtree")`:
stable under edits that move lines, and gone when the call or its function is. An allow-list maps sites to the
reason they may stay; a check fails on a site not listed and on a listed site that no longer exists (so the list
never outlives the code)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

Site = tuple[str, str, str]

#: the door and its functions: an Output, and a path one of them returned (or a `with out.staged() as d` folder)
DOOR_METHODS = frozenset({"path", "ensure", "staged", "scratch", "make_scratch", "Output", "claim_output",
                          "as_output"})


@dataclass(frozen=True)
class Found:
    site: Site
    line: int


def dotted(node: ast.expr, aliases: Mapping[str, str]) -> str:
    """`shutil.rmtree` for `shutil.rmtree`, `rmtree` imported from shutil, or `sh.rmtree` with `import shutil as
    sh`; `.write_text` for a method called on anything else."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id in aliases:
            return f"{aliases[node.value.id]}.{node.attr}"
        if isinstance(node.value, ast.Name) and node.value.id in {"os", "shutil", "np", "numpy", "torch", "yaml",
                                                                    "json", "csv"}:
            return f"{node.value.id}.{node.attr}"
        return f".{node.attr}"
    return "?"


def _aliases(tree: ast.Module) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
    return names


def _door_names(func: ast.AST) -> set[str]:
    """Names bound in one function to a path the door gave: `x = out.path(...)`, `x = out.ensure(...)`,
    `with out.staged(...) as x`, and a parameter annotated `Output` (mypy holds its callers to pass one the door
    made)."""
    names: set[str] = set()
    if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
        for arg in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]:
            note = arg.annotation
            if (isinstance(note, ast.Name) and note.id == "Output") or \
                    (isinstance(note, ast.Constant) and note.value == "Output"):
                names.add(arg.arg)

    def from_door(value: ast.expr | None) -> bool:
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        return ((isinstance(func, ast.Attribute) and func.attr in DOOR_METHODS)
                or (isinstance(func, ast.Name) and func.id in DOOR_METHODS))

    for _ in range(3):  # `d = out.ensure(); f = d / "x"; g = f.with_suffix(".y")`: a few steps of derivation
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and (from_door(node.value) or door_path(node.value, names)):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.withitem) and from_door(node.context_expr) \
                    and isinstance(node.optional_vars, ast.Name):
                names.add(node.optional_vars.id)
    return names


def door_path(node: ast.expr, door: set[str]) -> bool:
    """Whether a path expression came from the door: a door-bound name, `name / "x"`, or `out.path(...)`."""
    if isinstance(node, ast.Name):
        return node.id in door
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return door_path(node.left, door)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DOOR_METHODS:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in DOOR_METHODS:
            return True
        if node.func.attr in {"with_name", "with_suffix", "joinpath"}:
            return door_path(node.func.value, door)
    return False


Matcher = Callable[[ast.Call, str, set[str]], bool]


def walk(root: Path, match: Matcher, skip: frozenset[str] = frozenset()) -> Iterator[Found]:
    """Every call under `root` (a package folder) that `match(call, dotted name, door names)` accepts, with its
    site; modules in `skip` (paths relative to root) are not walked."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in skip:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        aliases = _aliases(tree)
        yield from _visit(tree, rel, "<module>", aliases, match, _door_names(tree))


def _visit(node: ast.AST, rel: str, scope: str, aliases: dict[str, str], match: Matcher,
           door: set[str]) -> Iterator[Found]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = child.name if scope == "<module>" else f"{scope}.{child.name}"
            names = door | _door_names(child) if not isinstance(child, ast.ClassDef) else door
            yield from _visit(child, rel, inner, aliases, match, names)
            continue
        if isinstance(child, ast.Call):
            name = dotted(child.func, aliases)
            if match(child, name, door):
                yield Found((rel, scope, name), child.lineno)
        yield from _visit(child, rel, scope, aliases, match, door)


def check(found: list[Found], allowed: Mapping[Site, str], what: str) -> list[str]:
    """Problems: a site not in `allowed`, and an allowed site that no longer exists."""
    problems = [f"{f.site[0]}:{f.line} in {f.site[1]}: {f.site[2]} {what}" for f in found if f.site not in allowed]
    seen = {f.site for f in found}
    problems += [f"allow-list entry {site} ({reason}) names a call that no longer exists: remove it"
                 for site, reason in allowed.items() if site not in seen]
    return problems
