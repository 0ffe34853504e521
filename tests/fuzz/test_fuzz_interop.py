"""Fuzzing the annotation tools' exports as `tailor annotate import-labels` reads them: Label Studio JSON,
Argilla records (flattened list, nested list, JSONL), Potato projects (config, user states, data file), each
a valid export with hostile edits planted (wrong types, deep nesting, dropped or renamed keys, truncated or
mis-encoded bytes, a wrapped or replaced document), read with the right format, another or auto. The oracle
(`hostile.check_verb`): exit 0, 2 or 3 with a one-line message, no traceback, nothing outside --out changed;
an import that exits 0 wrote its ratings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.conftest import count, fuzz, workdir
from tests.fuzz.hostile import check_verb, deep, json_bytes, mutate
from tests.interop.conftest import DATA

_FORMATS = st.sampled_from(["auto", "auto", "label-studio", "argilla", "potato"])
_LS = json.loads((DATA / "label_studio_foreign_pairwise.json").read_text(encoding="utf-8"))
_FLAT = json.loads((DATA / "argilla_sdk_pairwise_records_flat.json").read_text(encoding="utf-8"))
_NESTED = json.loads((DATA / "argilla_sdk_pairwise_records_nested.json").read_text(encoding="utf-8"))


def _copy(doc: Any) -> Any:
    return json.loads(json.dumps(doc))


def _import(root: Path, source: Path, fmt: str) -> int:
    out = root / "out"
    ratings = out / "ratings.jsonl"
    return check_verb(root, ["annotate", "import-labels", str(source), "--out", str(ratings), "--format", fmt], out,
                      done=ratings.is_file)


@fuzz(1200)
@given(st.data(), _FORMATS)
def test_label_studio_exports(data: st.DataObject, fmt: str) -> None:
    count("label studio export")
    doc = mutate(data.draw, _copy(_LS[: data.draw(st.integers(1, len(_LS)))]))
    with workdir() as root:
        path = root / "export.json"
        path.write_bytes(json_bytes(data.draw, doc))
        _import(root, path, fmt)


@fuzz(1200)
@given(st.data(), _FORMATS, st.sampled_from(["flat", "nested"]), st.sampled_from(["json", "jsonl"]))
def test_argilla_records(data: st.DataObject, fmt: str, shape: str, form: str) -> None:
    count("argilla records")
    source = _FLAT if shape == "flat" else _NESTED
    doc = mutate(data.draw, _copy(source[: data.draw(st.integers(1, len(source)))]))
    with workdir() as root:
        path = root / f"records.{form}"
        if form == "jsonl" and isinstance(doc, list):
            path.write_bytes(b"".join(json_bytes(data.draw, row) + b"\n" for row in doc))
        else:
            path.write_bytes(json_bytes(data.draw, doc))
        _import(root, path, fmt)


_POTATO_FILES = ("config.yaml", "state", "data")


@fuzz(500)
@given(st.data(), _FORMATS, st.sampled_from(["potato2_pairwise", "potato2_ab_rating"]),
       st.lists(st.sampled_from(_POTATO_FILES), min_size=1, max_size=2, unique=True))
def test_potato_projects(data: st.DataObject, fmt: str, project_name: str, targets: list[str]) -> None:
    count("potato project")
    with workdir() as root:
        project = root / "project"
        shutil.copytree(DATA / project_name, project)
        if "config.yaml" in targets:
            config = mutate(data.draw, yaml.safe_load((project / "config.yaml").read_text(encoding="utf-8")))
            text = deep(yaml.safe_dump(config, allow_unicode=data.draw(st.booleans()), width=10**6), data.draw)
            (project / "config.yaml").write_text(text, encoding="utf-8")
        if "state" in targets:
            states = sorted(project.glob("annotation_output/*/user_state.json"))
            if states:
                state = states[data.draw(st.integers(0, len(states) - 1))]
                doc = mutate(data.draw, json.loads(state.read_text(encoding="utf-8")))
                state.write_bytes(json_bytes(data.draw, doc))
        if "data" in targets:
            units = project / "data" / "units.jsonl"
            rows = [json.loads(line) for line in units.read_text(encoding="utf-8").splitlines() if line.strip()]
            k = data.draw(st.integers(0, len(rows) - 1))
            rows[k] = mutate(data.draw, rows[k], changes=2)
            units.write_bytes(b"".join(json_bytes(data.draw, row) + b"\n" for row in rows))
        _import(root, project if data.draw(st.booleans()) else project / "config.yaml", fmt)
