"""trim_heap: the C heap is trimmed once every TRIM_EVERY batches, never when turned off."""

from __future__ import annotations

import pytest

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
    heap.trim_heap()  # on glibc this calls malloc_trim(0); elsewhere it does nothing
    assert heap._every() >= 0
