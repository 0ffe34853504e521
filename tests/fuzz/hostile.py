"""Hostile versions of valid files (what a careless user, a broken tool or a truncated copy hands a verb) and the
oracle every one must pass: the verb ends with exit 0, 2 or 3 (exit 2 with one `error:` line), never a
traceback, and no file outside its out path changes (every file of the tree hashed before and after)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import click
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
    """sha256 of every file under root, outside the `skip` paths and other than files called one of `names`."""
    out = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name in names or any(path == s or s in path.parents for s in skip):
            continue
        out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@cache
def command() -> click.Command:
    """The `tailor` command, built once (typer's runner rebuilds it from the signatures on every call)."""
    return get_command(app)


def check_verb(root: Path, args: Sequence[str], out: Path, names: Sequence[str] = (),
               done: Callable[[], bool] | None = None) -> int:
    """The oracle: run `tailor ARGS` in-process; exit 0, 2 or 3 (2: one `error:` line), no traceback, every file
    under root outside `out` unchanged (and, on exit 0, `done()` holds). Returns the exit code."""
    before = tree(root, [out], names)
    result = CliRunner().invoke(command(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"tailor {' '.join(args)}: {result.exception!r}") from result.exception
    assert result.exit_code in (0, 2, 3), (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        err = result.stderr
        assert err.startswith("error: ") and err.count("\n") == 1, (args, err)
    if result.exit_code == 0 and done is not None:
        assert done(), (args, result.output)
    assert tree(root, [out], names) == before, f"tailor {' '.join(args)} changed a file outside {out}"
    return result.exit_code
