"""Concurrency control for remote calls: a fixed limit, or AIMD (additive increase, multiplicative decrease).

Why AIMD: providers publish rate limits per account and model that a user rarely knows. Starting at a
configured number, the limit doubles per round trip (slow start) until the first 429, then grows by about one
slot per round of successful calls, and halves on every 429; a
`Retry-After` pauses every new call until it has passed, so the whole run backs off rather than each call alone.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque


class Limiter:
    """An async semaphore whose size can change while calls are waiting (O(1) per acquire/release)."""

    def __init__(self, start: int, adaptive: bool = False, minimum: int = 1, maximum: int = 1024) -> None:
        if start < 1:
            raise ValueError("concurrency must be at least 1")
        self.adaptive = adaptive
        self.minimum = max(1, minimum)
        self.maximum = max(start, maximum) if adaptive else start
        self.limit = float(start)
        self.inflight = 0
        self.peak = start
        self.cuts = 0
        #: slow start (one more slot per success, i.e. doubling per round trip) until the first 429
        self.slow_start = True
        self._paused_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        """Take a slot (handed over directly on release, so the limit is never overshot), then wait out any
        Retry-After pause while holding it."""
        if self.inflight < int(self.limit) and not self._waiters:
            self.inflight += 1
        else:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self.release()  # a slot was handed to us that we will not use
                elif fut in self._waiters:
                    self._waiters.remove(fut)
                raise
        pause = self._paused_until - time.monotonic()
        while pause > 0:
            try:
                await asyncio.sleep(pause)
            except asyncio.CancelledError:
                self.release()
                raise
            pause = self._paused_until - time.monotonic()

    def release(self) -> None:
        self.inflight -= 1
        self._wake()

    def _wake(self) -> None:
        while self.inflight < int(self.limit) and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                self.inflight += 1
                fut.set_result(None)

    def on_success(self) -> None:
        if self.adaptive and self.limit < self.maximum:
            step = 1.0 if self.slow_start else 1.0 / self.limit
            self.limit = min(self.maximum, self.limit + step)
            self.peak = max(self.peak, int(self.limit))
            self._wake()

    def on_rate_limit(self, retry_after: float | None) -> None:
        """A 429: halve the limit (adaptive) and pause new calls for Retry-After seconds (always)."""
        if self.adaptive:
            self.limit = max(float(self.minimum), self.limit / 2)
            self.slow_start = False
            self.cuts += 1
        if retry_after:
            self._paused_until = max(self._paused_until, time.monotonic() + retry_after)
