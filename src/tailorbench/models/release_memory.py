"""Hand freed C-heap memory back to the operating system between encoder batches (glibc `malloc_trim`).

glibc keeps the memory that torch frees on the CPU in its heap for reuse, and with batches of varying shapes
that heap only grows: the shipped `tailor train-rm` recipe peaked at about 2 GB while its live data is far
smaller (docs/performance.md, "Peak memory of the encoders"). `malloc_trim(0)` returns the free pages; it
moves no live memory and changes no result. Where the C library is not glibc it does nothing.
`TAILORBENCH_HEAP_TRIM_EVERY` sets how many batches pass between trims (default 4; 0 turns it off)."""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable

from tailorbench.errors import ConfigError

#: batches between trims: a trim after every batch makes the next one fault in fresh pages (measured slower)
TRIM_EVERY = 4

_batches = 0


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


@functools.cache
def _every() -> int:
    value = os.environ.get("TAILORBENCH_HEAP_TRIM_EVERY", "").strip()
    if not value:
        return TRIM_EVERY
    if not value.isdigit():
        raise ConfigError(f"TAILORBENCH_HEAP_TRIM_EVERY must be a whole number of batches (0 = off), got {value!r}")
    return int(value)


def trim_heap() -> None:
    """Call after each batch: every `TRIM_EVERY` calls (or `TAILORBENCH_HEAP_TRIM_EVERY`) the C heap's free
    memory goes back to the system."""
    global _batches
    _batches += 1
    every, trim = _every(), _malloc_trim()
    if trim is not None and every > 0 and _batches % every == 0:
        trim(0)
