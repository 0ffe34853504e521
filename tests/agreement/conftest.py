"""Small rating files written by the tests themselves."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[[str, list[dict[str, Any]]], Path]:
    def write(name: str, rows: list[dict[str, Any]]) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return path

    return write
