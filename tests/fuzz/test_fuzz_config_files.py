"""Fuzzing the config files users write, as the verbs load them before any work: `train-rm --config`, `build run`
configs and `--map` files, each a valid file with hostile edits planted (wrong types, deep nesting, dropped or
renamed keys, damaged bytes). Each loads, or raises one TailorError (exit 2) with a one-line message naming the
file or the option; nothing else, and no file changes (the loaders only read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tailorbench.construction.config import load_build_config
from tailorbench.errors import TailorError
from tailorbench.interop.mapping import parse_map
from tailorbench.train.config import load_config
from tests.conftest import REPO_ROOT
from tests.fuzz.conftest import count, fuzz, workdir
from tests.fuzz.hostile import damage_bytes, deep, mutate, tree

_TRAIN = {"data": "demo", "out": "runs/rm", "model": "hf:tiny", "epochs": 2, "batch_size": 8, "learning_rate": 5e-5,
          "features": ["length"], "ngram_range": [1, 2], "scheduler": "cosine", "margin": 0.1, "dropout": False}
_BUILD = yaml.safe_load((REPO_ROOT / "examples" / "construction" / "config-small.yaml").read_text(encoding="utf-8"))
_MAP = {"item": "data.pair_id", "rater": "completed_by", "a": "data.answer_a", "b": "data.answer_b",
        "values": {"left": "A", "right": "B"}}


def _write(draw: st.DrawFn, path: Path, doc: Any) -> None:
    text = deep(yaml.safe_dump(doc, allow_unicode=True, width=10**6, sort_keys=False), draw)
    path.write_bytes(damage_bytes(draw, text.encode("utf-8")))


def _copy(doc: Any) -> Any:
    return yaml.safe_load(yaml.safe_dump(doc))


def _loads_or_refuses(root: Path, load: Any, path: Path) -> None:
    before = tree(root)
    try:
        load(path)
    except TailorError as error:
        message = str(error)
        assert message.strip() and "\n" not in message.strip(), message
    assert tree(root) == before


@fuzz(700)
@given(st.data())
def test_train_rm_config_files(data: st.DataObject) -> None:
    count("train-rm config file")
    with workdir() as root:
        path = root / "rm.yaml"
        _write(data.draw, path, mutate(data.draw, _copy(_TRAIN)))
        _loads_or_refuses(root, lambda p: load_config(p).validate(), path)


@fuzz(500)
@given(st.data())
def test_build_config_files(data: st.DataObject) -> None:
    count("build config file")
    with workdir() as root:
        path = root / "build.yaml"
        _write(data.draw, path, mutate(data.draw, _copy(_BUILD)))
        _loads_or_refuses(root, load_build_config, path)


@fuzz(300)
@given(st.data(), st.sampled_from(["map.yaml", "map.json"]))
def test_map_files(data: st.DataObject, name: str) -> None:
    count("--map file")
    with workdir() as root:
        path = root / name
        _write(data.draw, path, mutate(data.draw, _copy(_MAP)))
        _loads_or_refuses(root, lambda p: parse_map(str(p)), path)
