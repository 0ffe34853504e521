"""Fixtures of the gen-eval tests: a private call cache per test, so call counts at the server mean something."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def call_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.sqlite"
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(path))
    monkeypatch.delenv("TAILORBENCH_CACHE_POLICY", raising=False)
    return path
