"""trim_heap: the C heap is trimmed once every TRIM_EVERY batches, never when turned off."""

from __future__ import annotations

import platform

import pytest

from tailorbench.errors import ConfigError
from tailorbench.models import heap


@pytest.mark.parametrize("every,expected", [(4, 3), (1, 12), (0, 0)])
def test_trims_every_n_batches(monkeypatch: pytest.MonkeyPatch, every: int, expected: int) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    monkeypatch.setattr(heap, "_every", lambda: every)
    monkeypatch.setattr(heap, "_batches", 0)
    for _ in range(12):
        heap.trim_heap()
    assert len(calls) == expected and set(calls) <= {0}


def test_real_trim_runs() -> None:
    if platform.libc_ver()[0] == "glibc":
        assert heap._malloc_trim() is not None
    heap.trim_heap()  # on glibc this calls malloc_trim(0); elsewhere it does nothing


@pytest.mark.parametrize("value,expected", [("", heap.TRIM_EVERY), ("0", 0), ("16", 16)])
def test_interval_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str, expected: int) -> None:
    monkeypatch.setenv("TAILORBENCH_HEAP_TRIM_EVERY", value)
    heap._every.cache_clear()
    try:
        assert heap._every() == expected
    finally:
        heap._every.cache_clear()


def test_bad_interval_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAILORBENCH_HEAP_TRIM_EVERY", "often")
    heap._every.cache_clear()
    try:
        with pytest.raises(ConfigError, match="TAILORBENCH_HEAP_TRIM_EVERY"):
            heap._every()
    finally:
        heap._every.cache_clear()
