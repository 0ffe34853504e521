"""The illustrative arena after a small demo (six simulated participants over HTTP, ten votes each), shared by
the export and third-person tests (one demo per module)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app


def run_demo(base: Path, participants: int = 6) -> Path:
    """`tailor arena demo` into base/demo with its own call cache; returns the arena folder."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TAILORBENCH_CALL_CACHE", str(base / "calls.sqlite"))
    try:
        got = CliRunner().invoke(app, ["arena", "demo", str(base / "demo"), "--participants", str(participants),
                                       "--json"])
    finally:
        mp.undo()
    assert got.exit_code == 0, got.output
    return base / "demo"
