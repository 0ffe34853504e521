"""docs/cli.md's flag tables are the CLI's: written by scripts/cli_table.py, never edited by hand."""

from __future__ import annotations

import runpy
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_docs_flag_tables_are_the_apps() -> None:
    script = runpy.run_path(str(REPO / "scripts" / "cli_table.py"))
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    committed = text[text.index(script["BEGIN"]):text.index(script["END"]) + len(script["END"])]
    assert committed == script["tables"](), "docs/cli.md's flag tables are stale: run python scripts/cli_table.py"
