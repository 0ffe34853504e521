"""Hostile versions of valid files (what a careless user, a broken tool or a truncated copy hands a verb) and the
oracle every one must pass (`run_verb`; `check_verb` asserts it): the verb ends with exit 0, 2 or 3 (exit 2 with
one `error:` line, the last of stderr), never a traceback, and no file outside its out path changes (every file
of the tree hashed before and after). The misread classes (`MISREAD_CLASSES`, planted by `plant`): an input that
carries one must never be read with exit 0 and no `warning:` line (tests/fuzz/test_fuzz_cli.py)."""

from __future__ import annotations

import hashlib
import json
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import strategies as st
from typer.main import get_command

from tailorbench.cli.app import app

#: a placeholder replaced in the written text by a nesting far deeper than any parser's recursion limit
DEEP = "\u2063deep\u2063"
_CONTROL = st.sampled_from(["\x00", "\x1b", "\n", "\r", "\x7f", "\x85", "\u2028", "\ufeff"])
_TEXT = st.one_of(st.text(max_size=12), st.tuples(st.text(max_size=4), _CONTROL, st.text(max_size=4)).map("".join))
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), _TEXT,
                    st.sampled_from(["left", "right", "A", "B", "tie", "yes", "no", "accepted", "submitted", "draft",
                                     "discarded", "3", "scale_2", "Answer 1", ""]))
#: a value that does not belong where it is put
hostile_value: st.SearchStrategy[Any] = st.one_of(
    _SCALAR,
    st.lists(_SCALAR, max_size=3),
    st.dictionaries(_TEXT, _SCALAR, max_size=3),
    st.just(DEEP),
    st.integers(60, 70).map(lambda n: json.loads("[" * n + "]" * n)),
)


def _locations(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of a document, found without recursion."""
    out: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            out.append((node, key))
            if isinstance(child, dict | list):
                stack.append(child)
    return out


def mutate(draw: st.DrawFn, doc: Any, changes: int = 3) -> Any:
    """Up to `changes` edits at drawn places of `doc` (in place): a value replaced by a hostile one, a key
    removed or renamed, a hostile entry appended to a list; or the whole document replaced or wrapped."""
    whole = draw(st.integers(0, 9))
    if whole == 0:
        return draw(st.one_of(hostile_value, st.just({"records": doc}), st.just([doc]), st.just({"data": doc})))
    for _ in range(draw(st.integers(1, changes))):
        places = _locations(doc)
        if not places:
            break
        node, key = places[draw(st.integers(0, len(places) - 1))]
        action = draw(st.sampled_from(["set", "set", "set", "drop", "rename", "append"]))
        if action == "set":
            node[key] = draw(hostile_value)
        elif action == "drop":
            del node[key]
        elif action == "rename" and isinstance(node, dict):
            node[draw(_TEXT)] = node.pop(key)
        elif action == "append" and isinstance(node[key], list):
            node[key].append(draw(hostile_value))
    return doc


def deep(text: str, draw: st.DrawFn) -> str:
    """The placeholder written as a nesting 100 to 100,000 levels deep (JSON and YAML flow style alike)."""
    if DEEP not in text:
        return text
    n = draw(st.sampled_from([100, 3000, 100_000]))
    return text.replace(json.dumps(DEEP), "[" * n + "]" * n).replace(DEEP, "[" * n + "]" * n)


def damage_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """Sometimes the bytes themselves: truncated, a BOM, latin-1 bytes, a NUL, CRLF line ends; else unchanged."""
    how = draw(st.integers(0, 11))
    if how == 0 and len(data) > 1:
        return data[: draw(st.integers(1, len(data) - 1))]
    if how == 1:
        return b"\xef\xbb\xbf" + data
    if how == 2:
        return data + b"\xe9\xff"
    if how == 3:
        at = draw(st.integers(0, len(data)))
        return data[:at] + b"\x00" + data[at:]
    if how == 4:
        return data.replace(b"\n", b"\r\n")
    return data


def json_bytes(draw: st.DrawFn, doc: Any) -> bytes:
    """`doc` as JSON text (deep placeholders expanded), maybe damaged."""
    return damage_bytes(draw, deep(json.dumps(doc, ensure_ascii=draw(st.booleans())), draw).encode("utf-8"))


def tree(root: Path, skip: Sequence[Path] = (), names: Sequence[str] = ()) -> dict[str, str]:
    """sha256 of every file under root, outside the `skip` paths and other than files whose name matches one of
    `names` (shell patterns)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(fnmatch(path.name, n) for n in names) or any(
                path == s or s in path.parents for s in skip):
            continue
        out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@cache
def command() -> Any:
    """The `tailor` command, built once (typer's runner rebuilds it from the signatures on every call)."""
    return get_command(app)


@dataclass
class Outcome:
    """How one run of a verb ended, and what the oracle found wrong with it (empty: nothing)."""

    exit_code: int
    stdout: str
    stderr: str
    problems: list[str] = field(default_factory=list)

    @property
    def warned(self) -> bool:
        """A `warning: ...` line on stderr (the package's warnings: logs.WarningLines)."""
        return any(line.startswith("warning: ") for line in self.stderr.splitlines())


def run_verb(root: Path, args: Sequence[str], out: Path, names: Sequence[str] = (),
             skip: Sequence[Path] = ()) -> Outcome:
    """Run `tailor ARGS` in-process and judge it: exit 0, 2 or 3 (2: one `error:` line), no traceback, every file
    under root outside `out` and the `skip` paths (the command's own state) unchanged."""
    before = tree(root, [out, *skip], names)
    result = CliRunner().invoke(command(), list(args))
    found = Outcome(result.exit_code, result.stdout, result.stderr)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        error = result.exception
        frames = traceback.extract_tb(error.__traceback__)
        ours = [f for f in frames if "/tailorbench/" in f.filename] or frames
        where = ours[-1] if ours else None
        at = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
        found.problems.append(f"traceback: {type(error).__name__}{at}: {str(error)[:200]}")
    elif result.exit_code not in (0, 2, 3):
        found.problems.append(f"exit {result.exit_code}")
    elif "Traceback" in result.output:
        printed = result.output[result.output.index("Traceback"):]
        found.problems.append(f"traceback printed: {printed[-1500:]}")
    elif result.exit_code == 2 and not _one_error_line(result.stderr):
        found.problems.append(f"exit 2 without one error line: {result.stderr[-300:]!r}")
    after = tree(root, [out, *skip], names)
    if after != before:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        found.problems.append(f"changed outside the output: {changed[:3]}")
    return found


def _one_error_line(stderr: str) -> bool:
    """Exit 2's message: one `error: ` line, the last of stderr (progress and warnings may come before it)."""
    lines = stderr.rstrip("\n").split("\n")  # lines a terminal shows (U+2028 in a quoted name is not one)
    return bool(lines) and lines[-1].startswith("error: ") and sum(x.startswith("error:") for x in lines) == 1 \
        and stderr.endswith("\n")


def check_verb(root: Path, args: Sequence[str], out: Path, names: Sequence[str] = (),
               done: Callable[[], bool] | None = None) -> int:
    """The oracle as an assertion (`run_verb`); on exit 0, `done()` must hold too. Returns the exit code."""
    found = run_verb(root, args, out, names)
    assert not found.problems, (f"tailor {' '.join(args)}", found.problems, found.stderr[-2000:])
    if found.exit_code == 0 and done is not None:
        assert done(), (args, found.stdout)
    return found.exit_code


# --- the misread classes ------------------------------------------------------------------------------------

#: the mutation classes an input may carry; every one but "hostile" must never be read with exit 0 and no warning
MISREAD_CLASSES: tuple[str, ...] = ("wrong-type", "duplicate-key", "dropped-key", "bad-index", "unknown-enum",
                                    "non-http-url")
CLASSES: tuple[str, ...] = ("hostile", *MISREAD_CLASSES)
#: a key's first value, written in the text before the real one (`duplicate-key`)
_DUP = "DUPLICATEDKEY0"


def places(doc: Any, dotted: str) -> list[tuple[Any, Any]]:
    """Every (container, key) a dotted path names in `doc` (`*`: each element of a list, each value of a mapping;
    a number: a list index or a mapping key)."""
    found: list[tuple[Any, Any]] = [(None, doc)]
    parts = dotted.split(".")
    for n, part in enumerate(parts):
        nxt: list[tuple[Any, Any]] = []
        for parent, key in found:
            node = doc if parent is None else parent[key]
            if isinstance(node, dict):
                keys = list(node) if part == "*" else [part] if part in node else []
            elif isinstance(node, list):
                keys = list(range(len(node))) if part == "*" else (
                    [int(part)] if part.isdigit() and int(part) < len(node) else [])
            else:
                keys = []
            nxt.extend((node, k) for k in keys)
        found = nxt
        if n < len(parts) - 1:
            found = [(p, k) for p, k in found if isinstance(p[k], dict | list)]
    return found


def _other(value: Any) -> Any:
    """A different value of the same type (the first of two duplicate keys)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    return value


def plant(draw: st.DrawFn, doc: Any, kind: str, fields: Any) -> tuple[Any, tuple[str, Any] | None, str] | None:
    """Plant one mutation of class `kind` (a misread class) at a drawn place `fields` names; None when the file
    has no such place. Returns the document, for a duplicate key (key, its first value), and what was done."""
    paths = {"wrong-type": [*fields.ints, *fields.texts], "duplicate-key": [*fields.required, *fields.texts,
                                                                           *fields.enums, *fields.ints],
             "dropped-key": list(fields.required), "bad-index": [*fields.indices, *fields.positions],
             "unknown-enum": list(fields.enums), "non-http-url": list(fields.urls)}[kind]
    spots = [(path, spot) for path in paths for spot in places(doc, path)
             if kind != "duplicate-key" or isinstance(spot[0], dict)]
    if kind == "dropped-key":
        spots = [(p, s) for p, s in spots if isinstance(s[0], dict)]
    if not spots:
        return None
    path, (node, key) = spots[draw(st.integers(0, len(spots) - 1))]
    before = node[key]
    done = _planted(kind, path, node, key, draw, fields)
    return doc, done, f"{path}: {before!r} -> {node[key]!r}" if kind != "dropped-key" else f"{path} dropped"


def _planted(kind: str, path: str, node: Any, key: Any, draw: st.DrawFn, fields: Any) -> tuple[str, Any] | None:
    if kind == "wrong-type":
        if path in fields.ints:
            node[key] = draw(st.sampled_from([True, False, "3", 2.5]))
        else:
            node[key] = draw(st.sampled_from([5, 0, 1.5, True]))
    elif kind == "duplicate-key":
        first = _other(node[key])
        original = node[key]
        node[key] = _DUP
        return str(key), (first, original)
    elif kind == "dropped-key":
        del node[key]
    elif kind == "bad-index":
        bad: list[Any] = [-1, -5, "-2", "1_0", "0x1", 1.5, True]
        if path in fields.positions:  # a position past the end of its sequence (an id has no end)
            bad.append(10**6)
        node[key] = draw(st.sampled_from(bad))
    elif kind == "unknown-enum":
        node[key] = draw(st.sampled_from(["other", "Unknown", "EASY ", "tie-ish", "3"]))
    elif kind == "non-http-url":
        node[key] = draw(st.sampled_from(["javascript:alert(1)", "file:///etc/passwd", "ftp://example.org/x",
                                          "data:text/html,hi", "//example.org", "example.org"]))
    return None


def dump_json(doc: Any, dup: tuple[str, Any] | None) -> str:
    text = json.dumps(doc, ensure_ascii=False)
    if dup is not None:
        key, (first, original) = dup
        k = json.dumps(key)
        text = text.replace(f"{k}: {json.dumps(_DUP)}", f"{k}: {json.dumps(first)}, {k}: {json.dumps(original)}", 1)
    return text


def dump_yaml(doc: Any, dup: tuple[str, Any] | None) -> str:
    text = yaml.safe_dump(doc, allow_unicode=True, width=10**6, sort_keys=False)
    if dup is not None:
        key, (first, original) = dup
        lines = text.splitlines()
        for n, line in enumerate(lines):
            at = line.find(f"{key}: {_DUP}")
            if at >= 0 and line[:at].strip(" -") == "":
                lines[n] = line[:at] + f"{key}: {json.dumps(first)}"
                lines.insert(n + 1, " " * at + f"{key}: {json.dumps(original)}")
                break
        text = "\n".join(lines) + "\n"
    return text
