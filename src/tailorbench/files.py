"""Atomic writes: every file tailorbench writes goes to a temporary sibling first and is renamed into place,
so an interrupted or failed run never leaves half a file where a good one was. Every text written here has
the process's registered secrets masked (`redact.py`), a last guard behind redaction at the sources."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tailorbench.redact import redact_registered


def write_text_atomic(path: str | Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(redact_registered(text), encoding="utf-8")
    tmp.replace(path)
    return path


def write_json_atomic(path: str | Path, payload: Any) -> Path:
    """Pretty JSON, UTF-8 unescaped (Chinese stays readable)."""
    return write_text_atomic(path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


def load_or_compute(path: str | Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The JSON object at `path` when the file exists, else `compute()` (nothing is written)."""
    path = Path(path)
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    return compute()


def write_jsonl_atomic(path: str | Path, rows: Iterable[dict[str, Any] | str]) -> int:
    """One JSON object per line (dicts are serialised, strings are taken as already-serialised lines);
    returns the number of lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as handle:
        for row in rows:
            line = row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)
            handle.write(redact_registered(line) + "\n")
            count += 1
    tmp.replace(path)
    return count


def whole_lines(path: Path) -> bytes:
    """A file a run appends to, up to its last newline: the line a running or killed process is writing is left
    out (and left as it is: readers never change a run directory)."""
    data = Path(path).read_bytes()
    return data[: data.rfind(b"\n") + 1]
