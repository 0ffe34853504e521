"""Any layout can be annotated: a benchmark of a plugin's layout (not PersonaFeedback-shaped: its own splits
formal / casual, tiers low / high, row keys user / question / chosen / rejected) imports as pairwise items with
its own names, and exports to a tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailorbench.annotation.importer import read_import
from tailorbench.datasets import Layout
from tailorbench.errors import DataError
from tailorbench.interop import export_items
from tests.datasets.test_layout_registry import make_tone, tone_layout  # noqa: F401 (the fixture)


def test_a_plugin_layout_imports_with_its_own_names(tmp_path: Path, tone_layout: Layout) -> None:  # noqa: F811
    root = make_tone(tmp_path / "tone")
    fmt, items = read_import(root, "pairwise")
    assert fmt == "benchmark" and len(items) == 12
    assert {it.payload["split"] for it in items} == {"formal", "casual"}
    assert {it.payload["meta"]["source_tier"] for it in items} == {"low", "high"}
    assert all(it.payload["answer_a"].startswith("A ") for it in items)  # answer A = the layout's chosen
    summary = export_items(root, "pairwise", "label-studio", tmp_path / "ls", seed=2)
    assert summary["units"] == 12


def test_a_folder_no_layout_reads_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a file"):
        read_import(tmp_path, "pairwise")
