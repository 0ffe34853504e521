"""models/release_memory.trim_heap: the C heap is trimmed once every TRIM_EVERY batches, never when turned off."""

from __future__ import annotations

import platform

import pytest

from tailorbench.errors import ConfigError
from tailorbench.models import release_memory


@pytest.mark.parametrize("every,expected", [(4, 3), (1, 12), (0, 0)])
def test_trims_every_n_batches(monkeypatch: pytest.MonkeyPatch, every: int, expected: int) -> None:
    calls: list[int] = []
    monkeypatch.setattr(release_memory, "_malloc_trim", lambda: calls.append)
    monkeypatch.setattr(release_memory, "_every", lambda: every)
    monkeypatch.setattr(release_memory, "_batches", 0)
    for _ in range(12):
        release_memory.trim_heap()
    assert len(calls) == expected and set(calls) <= {0}


def test_real_trim_runs() -> None:
    if platform.libc_ver()[0] == "glibc":
        assert release_memory._malloc_trim() is not None
    release_memory.trim_heap()  # on glibc this calls malloc_trim(0); elsewhere it does nothing


@pytest.mark.parametrize("value,expected", [("", release_memory.TRIM_EVERY), ("0", 0), ("16", 16)])
def test_interval_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str, expected: int) -> None:
    monkeypatch.setenv("TAILORBENCH_HEAP_TRIM_EVERY", value)
    release_memory._every.cache_clear()
    try:
        assert release_memory._every() == expected
    finally:
        release_memory._every.cache_clear()


def test_bad_interval_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAILORBENCH_HEAP_TRIM_EVERY", "often")
    release_memory._every.cache_clear()
    try:
        with pytest.raises(ConfigError, match="TAILORBENCH_HEAP_TRIM_EVERY"):
            release_memory._every()
    finally:
        release_memory._every.cache_clear()
