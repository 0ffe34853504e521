"""Fixtures of the build tests: a private call cache per test (never the user's), closed afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def call_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "calls.sqlite"
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(path))
    monkeypatch.delenv("TAILORBENCH_CACHE_POLICY", raising=False)
    yield path
    from tailorbench.models import cache

    for key in list(cache._OPEN):
        cache._OPEN.pop(key).close()
