"""Ctrl-C during a run: the first stops dispatching and lets the calls in flight finish (their verdicts are
written), the second exits at once with 130. In batch mode the calls in flight wait on provider batches that may
take hours: the first Ctrl-C stops waiting at once (judges/llm.py), the batches stay recorded in the run
directory and running on the provider, and `--resume` re-attaches to them.

Why a plain `signal.signal` handler and not `loop.add_signal_handler`: the latter runs its callback only when
the event loop gets control back, so a judge computing in the loop's thread would also delay the second
Ctrl-C. A Python-level handler runs between bytecodes; it only writes with `os.write` (safe inside a handler)
and hands the stop to the loop with `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType

from tailorbench.failures import EXIT_INTERRUPTED

FIRST = (b"\ninterrupt: no new calls; waiting for the calls in flight (batch mode: not for its provider batches, "
         b"which stay recorded for --resume) and writing every finished verdict (Ctrl-C again quits at once)\n")
SECOND = b"\ninterrupted again: exiting now (every verdict written so far is kept)\n"


@contextmanager
def stop_on_sigint(stop: asyncio.Event) -> Iterator[None]:
    """While inside: the first SIGINT sets `stop` (on the running loop), the second ends the process (130).
    Outside the main thread (where handlers cannot be installed) SIGINT keeps its usual KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    seen = [0]

    def handler(signum: int, frame: FrameType | None) -> None:
        seen[0] += 1
        if seen[0] == 1:
            os.write(2, FIRST)
            loop.call_soon_threadsafe(stop.set)
            return
        os.write(2, SECOND)
        os._exit(EXIT_INTERRUPTED)

    previous = signal.signal(signal.SIGINT, handler)
    if previous is None:  # installed outside Python: hand back the usual KeyboardInterrupt
        previous = signal.default_int_handler
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


async def take_early_interrupt(stop: asyncio.Event) -> bool:
    """Whether a Ctrl-C came before `stop_on_sigint` was installed (or `stop` is already set), so the caller
    ends as interrupted with its resume command instead of a bare 130. Such a Ctrl-C reached asyncio's own
    handler, which cancels the main task; that pending cancel is taken here (one step of the loop) rather than
    at some later await where it would cut the run short without writing its state."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        with suppress(asyncio.CancelledError):
            await asyncio.sleep(0)
        while task.uncancel():
            pass
        stop.set()
    return stop.is_set()
