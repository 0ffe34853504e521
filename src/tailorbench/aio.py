"""Running the package's coroutines from synchronous code, with or without an event loop already running.

`asyncio.run` refuses to start inside a running loop (a Jupyter notebook, an async application). `run_sync`
is what every synchronous entry point that drives coroutines calls instead: with no loop running in this
thread it is `asyncio.run`; inside one, the coroutine runs to completion on a loop of its own in a worker
thread while this thread waits. So every blocking verb of the Python API works inside a running loop; the two
whose work runs on the caller's loop have coroutines to await (`tb.eval_async`, `tb.build_async`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def loop_running() -> bool:
    """Whether an event loop runs in the calling thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion and return its result, whether or not an event loop runs in this thread."""
    if not loop_running():
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="tailorbench-loop") as pool:
        return pool.submit(asyncio.run, coro).result()
