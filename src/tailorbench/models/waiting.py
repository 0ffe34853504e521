"""A line at least every `EVERY_S` seconds while calls wait on a provider, saying what they wait for.

Why: a provider that stops answering (down, unreachable, a batch that does not move) otherwise makes a run
silent for minutes (the SDK's own retries and timeouts, the poll interval, the backoff between attempts), which a
user cannot tell from a hang. The line is a note on stderr (`logs`: shown under `tailor`), independent of the
progress bar, so `--no-progress` runs and logs get it too. One helper for the two waits of `models/`: the
synchronous retries (`model.Model`) and batch polling (`batch_engine.Batcher`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress

from tailorbench.logs import get_logger

log = get_logger("tailorbench.models")

#: seconds between two lines while something waits
EVERY_S = 30.0


class Heartbeat:
    """Every `every_s` (default `EVERY_S`, read at each beat) while `say()` has something to say (a line: what
    waits, on what, since when), that line; `say()` returning None ends the beat until the next `ensure()`
    (nothing waits any more)."""

    def __init__(self, say: Callable[[], str | None], every_s: float | None = None) -> None:
        self.say = say
        self.every_s = every_s
        self._task: asyncio.Task[None] | None = None

    def ensure(self) -> None:
        """Start beating (on the running loop) unless it already does."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(EVERY_S if self.every_s is None else self.every_s)
            line = self.say()
            if line is None:
                return
            log.info("%s", line)

    async def aclose(self) -> None:
        """Stop beating. A beat already ended (its loop finished: `asyncio.run` cancels what is left, and a model
        may be closed later on another loop) is only forgotten."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
