"""The arena's leaderboard against LMArena's own library, arena-rank, on the same battles, item by item.

arena-rank pins numpy 2.3.3 and jax 0.8.1, so it runs in a venv of its own (scripts/ensure_arena_rank_venv.py
builds it once into the test cache; `make assets` does): tests/arena/arena_rank_checks.py runs there and writes its
ratings to a JSON file, compared here. A machine without the venv fails with the command that builds it, never
passes by skipping.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tailorbench.arena.ratings import bradley_terry
from tests.arena.test_ratings import simulate

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKS = Path(__file__).with_name("arena_rank_checks.py")
HOW_TO_BUILD = ("run `make assets`, or build it directly with `.venv/bin/python scripts/ensure_arena_rank_venv.py` "
                "(cache: $TAILORBENCH_CACHE or ~/.cache/tailorbench)")
TOL = 1e-6


def _venv_module() -> ModuleType:
    path = REPO_ROOT / "scripts" / "ensure_arena_rank_venv.py"
    spec = importlib.util.spec_from_file_location("tailorbench_arena_rank_venv", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], dict[str, Any]]:
    """Battles with ties, "both bad" and a planted length effect, and arena-rank's fit of them."""
    venv = _venv_module()
    paths = venv.arena_rank_paths()
    if not venv.venv_current(paths):
        pytest.fail(f"the arena-rank venv is missing or stale at {paths.venv}: {HOW_TO_BUILD}", pytrace=False)
    battles = simulate(np.random.default_rng(42), np.linspace(-1.0, 1.0, 8), 3000, tie_rate=0.2,
                       length_effect=0.5, long_talkers=(2,))
    folder = tmp_path_factory.mktemp("arena-rank")
    rows = [{"model_a": o.model_a, "model_b": o.model_b,
             "winner": {"a": "model_a", "b": "model_b"}.get(o.outcome, o.outcome),
             "length": (o.len_a - o.len_b) / (o.len_a + o.len_b + 1)} for o in battles]
    (folder / "in.json").write_text(json.dumps({"battles": rows}))
    proc = subprocess.run([str(paths.python), str(CHECKS), str(folder / "in.json"), str(folder / "out.json")],
                          capture_output=True, text=True, check=False, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return battles, json.loads((folder / "out.json").read_text())


def test_ratings_equal_arena_rank_item_by_item(reference: tuple[list[Any], dict[str, Any]]) -> None:
    battles, ref = reference
    ours = {c.contestant: c.rating for c in bradley_terry(battles, min_battles=0, bootstrap=0).contestants}
    assert sorted(ours) == sorted(ref["plain"])
    for name, rating in ref["plain"].items():
        assert ours[name] == pytest.approx(rating, abs=TOL), name


def test_style_control_equals_arena_rank_without_its_penalty(reference: tuple[list[Any], dict[str, Any]]) -> None:
    """The length covariate normalised as LMArena does gives arena-rank's ratings and coefficient with its penalty
    off; its default penalty (1.0 on the mean log-likelihood) shrinks the coefficient, which we do not."""
    battles, ref = reference
    r = bradley_terry(battles, min_battles=0, bootstrap=0, style_control=True)
    ours = {c.contestant: c.rating for c in r.contestants}
    for name, rating in ref["style"]["ratings"].items():
        assert ours[name] == pytest.approx(rating, abs=TOL), name
    assert r.length is not None
    assert r.length.coefficient == pytest.approx(ref["style"]["coefficient"], abs=1e-8)
    shrunk = ref["style_default_penalty"]["coefficient"]
    assert 0 < shrunk < r.length.coefficient / 2 and math.isfinite(shrunk)
