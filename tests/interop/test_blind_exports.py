"""Blind exports: nothing a tool sends an annotator's browser tells which answer is which. For every tool and
task type, the files the tool serves from (Label Studio's tasks and labeling config, Argilla's records and
settings, Potato's data file and config) carry no tailorbench field but an opaque reference (`tb_ref`), whose
value does not depend on the answers' sides; the unit each reference stands for (its item, task and swap) is
in the sidecar `tailorbench-key.json`, which the importer reads and without which it imports nothing of ours."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tailorbench.interop import export_items, read_export
from tests.interop.conftest import TASKS, items_file, read_json, unit_key

#: per tool, the files its server reads to build what annotators see
SERVED = {"label-studio": ("tasks.json", "config.xml"), "argilla": ("records.json", "settings.json"),
          "potato": ("data/units.jsonl", "config.yaml")}


def _keys(node: Any) -> list[str]:
    """Every key of a JSON/YAML document, nested ones included."""
    if isinstance(node, dict):
        return [str(k) for k in node] + [k for v in node.values() for k in _keys(v)]
    if isinstance(node, list):
        return [k for v in node for k in _keys(v)]
    return []


def _documents(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines()]
    if path.suffix == ".yaml":
        return [yaml.safe_load(text)]
    if path.suffix == ".json":
        return [json.loads(text)]
    return []


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("tool", list(SERVED))
def test_served_files_carry_only_an_opaque_reference(tmp_path: Path, tool: str, task: str) -> None:
    export_items(items_file(task), task, tool, tmp_path, seed=3)
    key = unit_key(tmp_path)
    assert key and all(set(unit) == {"tb_unit", "tb_item", "tb_task", "tb_swap"} for unit in key.values())
    seen_refs: set[str] = set()
    for name in SERVED[tool]:
        path = tmp_path / name
        text = path.read_text(encoding="utf-8")
        assert "swap" not in text.lower(), (tool, name)
        assert not (set(re.findall(r"tb_[a-z]+", text)) - {"tb_ref"}), (tool, name)
        for doc in _documents(path):
            assert {k for k in _keys(doc) if k.startswith("tb_")} <= {"tb_ref"}
        seen_refs |= set(re.findall(r"[0-9a-f]{10}-\d+", text))
    assert seen_refs == set(key)
    # the references are positions in the export, the same whatever the sides drawn
    export_items(items_file(task), task, tool, tmp_path / "other-seed", seed=11)
    assert set(unit_key(tmp_path / "other-seed")) == set(key)


def test_import_needs_the_key_and_says_where_it_goes(tmp_path: Path) -> None:
    from tests.interop.conftest import labels_for
    from tests.interop.test_label_studio import annotate

    export_items(items_file("pairwise"), "pairwise", "label-studio", tmp_path / "project", seed=3)
    tasks = read_json(tmp_path / "project" / "tasks.json")
    key = unit_key(tmp_path / "project")
    path, _ = annotate(tmp_path / "project", "pairwise", labels_for([key[t["data"]["tb_ref"]] for t in tasks],
                                                                   "pairwise"))
    ratings, _ = read_export(path)
    assert len(ratings.ratings) == 12 and {r.item for r in ratings.ratings} == {u["tb_unit"] for u in key.values()}
    # the tool's export downloaded elsewhere, without the key: nothing of ours is read, and the report says why
    elsewhere = tmp_path / "downloads" / "export.json"
    elsewhere.parent.mkdir()
    shutil.copy(path, elsewhere)
    ratings, report = read_export(elsewhere)
    assert not ratings.ratings and report.unmappable
    assert all("tailorbench-key.json" in u["reason"] for u in report.unmappable)
    # the key beside it again: the same ratings
    shutil.copy(tmp_path / "project" / "tailorbench-key.json", elsewhere.parent)
    assert len(read_export(elsewhere)[0].ratings) == 12
