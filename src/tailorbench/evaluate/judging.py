"""The one judge loop for everything that asks a judge to choose between two answers: `tailor eval` (cases x
setting x orders -> predictions.jsonl), gen-eval's judging (generations x orders -> verdicts.jsonl) and, through
`tailor eval`'s runner, train-rm's per-epoch evaluation.

Two variation points: the *pair source* (the tasks, anything with `.input: JudgeInput`, in the order they are
handed to the judge) and the *row mapper* `(task, verdict, judge spec) -> JSON row`, the line written for each
verdict. Everything else is the same for every caller:

- a `StreamingJudge` (API judges) hands verdicts over one by one: one write and flush per verdict, so a kill -9
  loses only the calls in flight;
- any other judge works in batches, a few in flight, each written (and flushed) the moment it lands;
- once `stop` is set (the first Ctrl-C, `interrupt.stop_on_sigint`) nothing new starts, what is in flight is
  finished and written; an exception from the judge ends the loop after every finished verdict is written.

Resume is the caller's: it leaves out of the pair source what its file already answers (`runner.read_done`: a
failed call is judged again and its new line appended; the last line per key counts).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import orjson

from tailorbench.files import appending
from tailorbench.judges.base import PairJudge, StreamingJudge
from tailorbench.schema import JudgeInput, Verdict


class PairTask(Protocol):
    """What the loop needs of a task: the input the judge sees."""

    @property
    def input(self) -> JudgeInput: ...


T = TypeVar("T", bound=PairTask)
#: (task, verdict, judge spec) -> the JSON row written for that verdict
RowMapper = Callable[[T, Verdict, str], dict[str, Any]]


class Progress:
    """A progress bar on stderr that counts what it names (`unit`: verdicts, generations; `of`: what makes the
    total, e.g. `72 cases x 2 orders`, shown until the first lands), with the time spent and the time left
    (silent when disabled). `phase(text)` names what runs before the first unit lands (preparing the judge:
    loading its model)."""

    def __init__(self, total: int, label: str, enabled: bool, unit: str = "items", of: str = "") -> None:
        self.enabled = enabled
        self.label = label
        self.of = of
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TextColumn(unit),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._bar.add_task(label if not of else f"{label} ({of})", total=total)
        self._bar.start()

    def phase(self, text: str | None) -> None:
        """Name what the bar waits on (`label (text)`), or nothing (None: the units are being counted)."""
        if self.enabled:
            said = "; ".join(x for x in (text, self.of) if x)
            described = self.label if text is None or not said else f"{self.label} ({said})"
            self._bar.update(self._task, description=described)

    def advance(self, n: int) -> None:
        if self.enabled:
            self._bar.update(self._task, advance=n)

    def close(self) -> None:
        if self.enabled:
            self.enabled = False
            self._bar.stop()


#: a phase that took this long (seconds) or longer says so when it ends; a quicker one only shows its spinner, so
#: that an error found at once stays the one line on stderr
PHASE_SAID_FROM_S = 1.0


@contextmanager
def phase(text: str, enabled: bool) -> Iterator[None]:
    """A spinner on stderr naming the work between the bars (loading a benchmark, computing statistics), with
    the time it took said when it ends (from `PHASE_SAID_FROM_S`); silent when disabled."""
    if not enabled:
        yield
        return
    from rich.console import Console

    console = Console(stderr=True)
    start = time.monotonic()
    with console.status(text):
        yield
    took = time.monotonic() - start
    if took >= PHASE_SAID_FROM_S:
        console.print(f"{text}: {took:.1f} s", highlight=False, soft_wrap=True)


async def judge_pairs(
    judge: PairJudge,
    tasks: Sequence[T],
    row: RowMapper[T],
    out: Path,
    progress: Progress | None = None,
    stop: asyncio.Event | None = None,
    max_inflight: int | None = None,
) -> list[dict[str, Any]]:
    """Judge every task and append `row(task, verdict, judge.spec)` to `out` (JSON lines) the moment its
    verdict lands (a streaming judge) or its batch lands (any other judge). Once `stop` is set nothing new
    starts; what is in flight is finished and written. An exception from the judge ends the loop, after every
    finished verdict is written. Returns the rows written, in the order they were written. Batches in flight:
    `max_inflight`, else the judge's own `max_inflight` where it has one (an executor's workers x depth), else 4."""
    stop = stop or asyncio.Event()
    if max_inflight is None:
        max_inflight = int(getattr(judge, "max_inflight", 4))
    progress = progress or Progress(0, "", False)
    with appending(out) as handle:
        if isinstance(judge, StreamingJudge):
            return await _judge_streamed(judge, tasks, row, handle, progress, stop)
        return await _judge_batched(judge, tasks, row, handle, progress, stop, max_inflight)


async def _judge_streamed(
    judge: PairJudge, tasks: Sequence[T], row: RowMapper[T], handle: IO[bytes], progress: Progress,
    stop: asyncio.Event,
) -> list[dict[str, Any]]:
    """One write (and flush, so a kill -9 keeps it) per verdict: a resume repeats only the calls in flight."""
    assert isinstance(judge, StreamingJudge)
    written: list[dict[str, Any]] = []
    spec = judge.spec
    stream = judge.judge_stream([t.input for t in tasks], stop)
    try:
        async for position, verdict in stream:
            line = row(tasks[position], verdict, spec)
            handle.write(orjson.dumps(line) + b"\n")
            handle.flush()
            written.append(line)
            progress.advance(1)
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    return written


async def _judge_batched(
    judge: PairJudge, tasks: Sequence[T], row: RowMapper[T], handle: IO[bytes], progress: Progress,
    stop: asyncio.Event, max_inflight: int,
) -> list[dict[str, Any]]:
    """A few batches in flight; each is written as it lands (the unit a local model works in)."""
    written: list[dict[str, Any]] = []
    size = max(1, judge.batch_size)
    queue = (tasks[i : i + size] for i in range(0, len(tasks), size))

    async def one(batch: Sequence[T]) -> tuple[Sequence[T], list[Verdict]]:
        return batch, await judge.judge([t.input for t in batch])

    pending: set[asyncio.Future[tuple[Sequence[T], list[Verdict]]]] = set()
    for batch in queue:
        pending.add(asyncio.ensure_future(one(batch)))
        if len(pending) >= max_inflight:
            break
    error: BaseException | None = None
    spec = judge.spec
    try:
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for fut in finished:
                if fut.exception() is not None:
                    error = error or fut.exception()
                    continue
                batch, verdicts = fut.result()
                if len(verdicts) != len(batch):
                    error = error or RuntimeError(
                        f"judge {judge.spec} returned {len(verdicts)} verdicts for {len(batch)}")
                    continue
                rows = [row(t, v, spec) for t, v in zip(batch, verdicts)]
                handle.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
                written.extend(rows)
                handle.flush()
                progress.advance(len(batch))
                nxt = None if stop.is_set() or error is not None else next(queue, None)
                if nxt is not None:
                    pending.add(asyncio.ensure_future(one(nxt)))
            if error is not None:
                raise error
    finally:
        for fut in pending:
            fut.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    return written
