"""Running the package's coroutines from synchronous code, with or without an event loop already running.

`asyncio.run` refuses to start inside a running loop (a Jupyter notebook, an async application). `run_sync`
is what every synchronous entry point that drives coroutines calls instead: with no loop running in this
thread it is `asyncio.run`; inside one, the coroutine runs to completion on a loop of its own in a worker
thread while this thread waits. Code that is already async should await the `*_async` twins of the Python API
(`await tb.eval_async(...)`) instead of blocking its loop.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


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


def async_twin(fn: Callable[P, T]) -> Callable[P, Coroutine[Any, Any, T]]:
    """The `*_async` twin of a blocking function: the same call in a worker thread, awaitable from a running
    loop without blocking it."""

    @functools.wraps(fn)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    twin.__name__ = f"{fn.__name__}_async"
    twin.__qualname__ = f"{fn.__qualname__}_async"
    twin.__doc__ = f"Awaitable twin of `{fn.__name__}` (runs it in a worker thread).\n\n{fn.__doc__ or ''}"
    return twin
