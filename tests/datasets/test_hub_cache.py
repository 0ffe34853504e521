"""`--data personafeedback` resolves through a pre-populated Hugging Face cache, never the network."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tailorbench.datasets import load_benchmark
from tailorbench.errors import ConfigError
from tests.helpers.pf_data import make_hub

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _populate_cache(cache: Path) -> Path:
    repo = cache / "datasets--PersonalAILab--PersonaFeedback"
    snapshot = repo / "snapshots" / COMMIT
    make_hub(snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    return snapshot


def test_personafeedback_from_populated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "hub"
    _populate_cache(cache)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    bench = load_benchmark("personafeedback")
    assert bench.layout == "hub"
    assert len(bench.cases) == 18


def test_personafeedback_missing_from_cache_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="not in the Hugging Face cache"):
        load_benchmark("personafeedback")
    shutil.rmtree(tmp_path / "empty", ignore_errors=True)
