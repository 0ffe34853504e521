"""Fixtures of the model-layer tests: a private call cache per test (never the user's), and a fault proxy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def call_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every model at a fresh cache file for this test (also inherited by subprocesses)."""
    path = tmp_path / "calls.sqlite"
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(path))
    monkeypatch.delenv("TAILORBENCH_CACHE_POLICY", raising=False)
    return path


@pytest.fixture(autouse=True)
def _fresh_shared_caches() -> Iterator[None]:
    """Close the per-process shared cache connections between tests."""
    yield
    from tailorbench.models import cache

    for key in list(cache._OPEN):
        cache._OPEN.pop(key).close()
