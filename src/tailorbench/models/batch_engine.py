"""Batch mode behind the one model wrapper: calls that miss the cache go into provider batches, not requests.

Why here and not in a judge: the wrapper (`models/model.py`) has already answered cache hits and merged
identical requests in flight before a call reaches `Batcher.call`, so only unique uncached calls are ever
submitted, and every caller (judges, gen-eval, build) gets batch mode by one option.

The shape is Inspect AI's (an intake queue that a burst of calls fills, a poller per model), written for
crash safety first:

- intake: calls that arrive together are gathered until `wait_s` passes without a new one (or a batch is
  full), then split to the provider's limits (requests and bytes per batch; one request over the byte limit
  fails alone with its size named);
- each batch is recorded in the run's state file (`batch_state.py`) before it is sent, and again with its
  provider id before anything waits on it; a resume re-attaches every call whose custom_id (the call key
  itself: 64 hex characters, stable across processes) is in a batch still recorded as open;
- the poller asks for each open batch every `poll_s`; a finished batch's answers go into the call cache and
  are flushed before the entry is marked ended, then the callers get them (so predictions are appended as
  each batch completes); while calls wait, a line at least every 30 s (`waiting.Heartbeat`) names the batches
  and whether the provider answers (a provider that does not: since when, the last error, the polls left
  before the calls are given up, recorded for `--resume`, which re-attaches to them);
- a request the batch did not run (expired, cancelled) or answered with a retryable error (429, 5xx) goes
  into a new batch, at most `max_resubmits` times; any other error is a failed call, counted like a
  synchronous one; a batch refused as a whole fails its calls with the provider's reasons; an unreadable
  result line is named (file, line) in the failure of every call it leaves without an answer;
- cost: the provider's batch price, `pricing.BATCH_DISCOUNT` of the synchronous price, is what each answer
  costs; `describe()` also gives what the synchronous calls would have cost.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.models.base import CallFailure, ChatResult, GenParams, Message
from tailorbench.models.batch_counts import BatchCounters
from tailorbench.models.batch_lines import BATCH_APIS, BatchProvider, LineError, Outcome, Poll
from tailorbench.models.batch_state import ENDED, FAILED, SUBMITTED, SUBMITTING, BatchState, state_path
from tailorbench.models.model import CallError
from tailorbench.models.pricing import BATCH_DISCOUNT
from tailorbench.models.waiting import Heartbeat
from tailorbench.options import as_float, as_int
from tailorbench.redact import redact

log = logging.getLogger("tailorbench.batch")
#: seconds between two polls of a batch, and of quiet after the last call before a batch is submitted
DEFAULT_POLL_S = 30.0
DEFAULT_WAIT_S = 2.0
#: consecutive failed polls of one batch before its calls are given up (the batch stays recorded)
MAX_POLL_ERRORS = 10


@dataclass
class _Waiter:
    key: str
    future: asyncio.Future[ChatResult | CallFailure]
    line: bytes = b""
    submissions: int = 0
    started: float = field(default_factory=time.perf_counter)


@dataclass
class _Open:
    """A recorded batch that callers wait on. `live`: submitted by this process (else attached from disk)."""

    entry: dict[str, Any]
    waiters: dict[str, _Waiter] = field(default_factory=dict)
    live: bool = True
    poll_errors: int = 0


class Batcher:
    """The batch mode of one `Model` (its cache, stats and prices)."""

    def __init__(self, provider: BatchProvider, model: Any, *, options: dict[str, Any], poll_s: float,
                 wait_s: float, max_requests: int | None, max_bytes: int | None, max_resubmits: int) -> None:
        self.provider = provider
        self.model = model
        self.options = options
        self.poll_s = poll_s
        self.wait_s = wait_s
        self.max_requests = min(max_requests or provider.max_requests, provider.max_requests)
        self.max_bytes = min(max_bytes or provider.max_bytes, provider.max_bytes)
        self.max_resubmits = max_resubmits
        self.counters = BatchCounters()
        self.state_path: Path | None = None
        self._state: BatchState | None = None
        #: custom_id -> entry of the batches a previous process recorded and did not see end
        self._recorded: dict[str, dict[str, Any]] = {}
        self._open: dict[str, _Open] = {}
        self._intake: list[_Waiter] = []
        self._arrived = asyncio.Event()
        self._opened = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._error: BaseException | None = None
        self._first_submit: float | None = None
        self._shown: tuple[int, ...] = ()
        #: since when, and with what error, the provider has not answered a poll (None: it answers)
        self._unreachable: tuple[float, str] | None = None
        #: while calls wait on batches, a line at least every `waiting.EVERY_S` saying on what
        self._heartbeat = Heartbeat(self._waiting_line)

    # -- set-up ----------------------------------------------------------------------------------------------

    def bind(self, run_dir: str | Path) -> None:
        """The run directory whose state file records this model's batches (`tailor eval` binds its --out)."""
        self.state_path = state_path(run_dir, self.model.spec)

    async def check(self) -> None:
        """Before any call: a state file to write, and a server with the batch API that accepts the key."""
        if self.state_path is None:
            raise ConfigError(f"{self.model.spec}: batch=true needs a run directory for its batch state "
                              "(tailor eval binds its --out; in Python call model.bind_run_dir(DIR))")
        await self.provider.check()

    def _start(self) -> None:
        if self._state is not None:
            return
        if self.state_path is None:
            raise ConfigError(f"{self.model.spec}: batch=true needs a run directory (model.bind_run_dir(DIR))")
        self._state = BatchState.open(self.state_path, self.model.spec, self.provider.name, self.options)
        for entry in self._state.entries:
            if entry["status"] in (SUBMITTING, SUBMITTED):
                for custom_id in entry["custom_ids"]:
                    self._recorded[custom_id] = entry
        self._tasks = [asyncio.ensure_future(self._guard(self._intake_loop())),
                       asyncio.ensure_future(self._guard(self._poll_loop()))]

    # -- one call --------------------------------------------------------------------------------------------

    async def call(self, key: str, messages: Sequence[Message], params: GenParams) -> ChatResult | CallFailure:
        """The answer of one unique uncached call, once its batch has ended."""
        if self._error is not None:
            raise self._error
        self._start()
        waiter = _Waiter(key, asyncio.get_running_loop().create_future(), self.provider.line(key, messages, params))
        entry = self._recorded.get(key)
        if entry is not None:  # submitted by an earlier process: wait for that batch, send nothing
            opened = self._open.get(entry["chunk"])
            if opened is None:
                opened = self._open[entry["chunk"]] = _Open(entry, live=False)
                self.counters.batches.attached += 1
                self._opened.set()
            opened.waiters[key] = waiter
            waiter.submissions = 1
            self._heartbeat.ensure()
            self.counters.requests.attached += 1
            self._first_submit = self._first_submit or time.perf_counter()
        else:
            self._enqueue(waiter)
        return await waiter.future

    def _enqueue(self, waiter: _Waiter) -> None:
        if len(waiter.line) + 1 > self.max_bytes:
            self._fail(waiter, "client", f"the request is {len(waiter.line):,} bytes, over the {self.provider.name} "
                                         f"batch limit of {self.max_bytes:,} bytes; it was not sent")
            return
        self._intake.append(waiter)
        self._arrived.set()

    # -- intake ----------------------------------------------------------------------------------------------

    async def _intake_loop(self) -> None:
        while True:
            await self._arrived.wait()
            while len(self._intake) < self.max_requests:  # a burst: wait until it is over
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), self.wait_s)
                except TimeoutError:
                    break
            self._arrived.clear()
            taken, self._intake = self._intake, []
            for chunk in self._split(taken):
                await self._submit(chunk)

    def _split(self, waiters: list[_Waiter]) -> list[list[_Waiter]]:
        """Chunks within the provider's limits, in arrival order."""
        chunks: list[list[_Waiter]] = []
        size = 0
        for waiter in waiters:
            length = len(waiter.line) + 1
            if not chunks or len(chunks[-1]) >= self.max_requests or size + length > self.max_bytes:
                chunks.append([])
                size = 0
            chunks[-1].append(waiter)
            size += length
        return chunks

    async def _submit(self, waiters: list[_Waiter]) -> None:
        assert self._state is not None
        state = self._state
        entry = state.add(uuid.uuid4().hex[:20], [w.key for w in waiters])  # on disk before anything is sent
        opened = self._open[entry["chunk"]] = _Open(entry, {w.key: w for w in waiters})

        def note(**fields: Any) -> None:
            entry.update(fields)
            state.save()

        for waiter in waiters:
            waiter.submissions += 1
        try:
            batch_id = await self.provider.submit(entry["chunk"], [w.line for w in waiters], note)
        except CallError as exc:
            note(status=FAILED, error=exc.message)
            del self._open[entry["chunk"]]
            for waiter in opened.waiters.values():
                self._fail(waiter, exc.kind, f"the batch could not be submitted: {exc.message}")
            return
        note(batch_id=batch_id, status=SUBMITTED, submitted=time.time())
        self.counters.batches.submitted += 1
        self.counters.requests.submitted += len(waiters)
        self.model.stats.requests += len(waiters)
        self._first_submit = self._first_submit or time.perf_counter()
        log.info("%s: submitted batch %s (%d requests)", self.model.spec, batch_id, len(waiters))
        self._opened.set()
        self._heartbeat.ensure()

    # -- polling ---------------------------------------------------------------------------------------------

    async def _poll_loop(self) -> None:
        while True:
            if not self._open:
                self._opened.clear()
                await self._opened.wait()
                continue
            for opened in list(self._open.values()):
                await self._poll_one(opened)
            self._progress()
            if self._open:
                await asyncio.sleep(self.poll_s)

    async def _poll_one(self, opened: _Open) -> None:
        entry = opened.entry
        if not entry.get("batch_id"):
            if opened.live:
                return  # being submitted by this process right now
            await self._recover(opened)
            return
        try:
            poll = await self.provider.poll(entry["batch_id"])
            if poll.state != "running":
                await self._collect(opened, poll)
                return
        except CallError as exc:
            opened.poll_errors += 1
            since = self._unreachable[0] if self._unreachable else time.perf_counter()
            self._unreachable = (since, f"{exc.kind}: {exc.message}; poll {opened.poll_errors} of {MAX_POLL_ERRORS} "
                                        f"failed in a row for batch {entry['batch_id']}")
            if opened.poll_errors >= MAX_POLL_ERRORS:
                self._give_up(opened, exc)
            return
        opened.poll_errors = 0
        self._unreachable = None
        entry["provider_status"], entry["counts"] = poll.status, poll.counts

    async def _recover(self, opened: _Open) -> None:
        """An entry a crash left without its batch id: find that batch, or send its calls again."""
        assert self._state is not None
        entry = opened.entry
        batch_id = await self.provider.recover(entry)
        if batch_id is not None:
            entry.update(batch_id=batch_id, status=SUBMITTED)
            self._state.save()
            self.counters.batches.recovered += 1
            return
        log.warning("%s: batch chunk %s was recorded but never found on the server: its %d calls are sent again",
                    self.model.spec, entry["chunk"], len(entry["custom_ids"]))
        entry["status"] = FAILED
        entry["error"] = "never found on the server after a crash; its calls were sent again"
        self._state.save()
        del self._open[entry["chunk"]]
        for custom_id in entry["custom_ids"]:
            self._recorded.pop(custom_id, None)
        for waiter in opened.waiters.values():
            waiter.submissions = 0
            self._enqueue(waiter)

    def _give_up(self, opened: _Open, exc: CallError) -> None:
        del self._open[opened.entry["chunk"]]
        for waiter in opened.waiters.values():
            self._fail(waiter, exc.kind, f"batch {opened.entry['batch_id']} could not be polled {MAX_POLL_ERRORS} "
                                         f"times: {exc.message} (it stays recorded; --resume re-attaches)")

    async def _collect(self, opened: _Open, poll: Poll) -> None:
        """Take a finished batch's answers: cache them, mark the entry ended, then hand them over."""
        assert self._state is not None
        entry = opened.entry
        batch_id = entry["batch_id"]
        if poll.state == "failed":
            del self._open[entry["chunk"]]
            entry.update(provider_status=poll.status, counts=poll.counts, ended=time.time())
            entry["status"] = FAILED
            entry["error"] = poll.detail
            self._state.save()
            self.counters.batches.failed += 1
            for waiter in opened.waiters.values():
                self._fail(waiter, "client", f"batch {batch_id} was refused: {poll.detail}")
            return
        results = await self.provider.results(batch_id, poll)  # a CallError: polled (and fetched) again
        del self._open[entry["chunk"]]
        entry.pop("cost_usd", None)
        entry.pop("sync_cost_usd", None)
        entry.update(provider_status=poll.status, counts=poll.counts, ended=time.time())
        answered: list[tuple[_Waiter, ChatResult]] = []
        again: list[_Waiter] = []
        for key, answer in results.outcomes.items():
            if isinstance(answer, ChatResult):
                self._price(answer, entry)
                self.model.cache.put(key, self.model.backend, self.model.model, self.model.api.public_base_url,
                                     "chat", answer.to_cache())
                if key in opened.waiters:
                    answered.append((opened.waiters[key], answer))
        self.model.cache.flush()  # the answers on disk before the entry says they were taken
        if results.malformed:
            self.counters.malformed_lines += len(results.malformed)
            entry["malformed"] = results.malformed[:20]
            log.warning("%s: batch %s: %d unreadable result line(s), first: %s", self.model.spec, batch_id,
                        len(results.malformed), results.malformed[0])
        entry["status"] = ENDED
        self._state.save()
        for custom_id in entry["custom_ids"]:
            self._recorded.pop(custom_id, None)
        self.counters.batches.ended += 1
        for waiter, result in answered:
            result.latency_s = time.perf_counter() - waiter.started
            self.counters.requests.answered += 1
            if not waiter.future.done():  # (a caller that stopped waiting, e.g. after Ctrl-C, has cancelled it)
                waiter.future.set_result(result)
        for key, waiter in opened.waiters.items():
            if waiter.future.done():
                continue
            outcome: Outcome | None = results.outcomes.get(key)
            if outcome is None and results.malformed:
                self._fail(waiter, "bad_response", f"batch {batch_id} has no readable answer for this call: "
                                                   f"{results.malformed[0]}")
                continue
            if outcome is None:
                outcome = LineError("unanswered", f"batch {batch_id} ended without an answer for this call", True)
            assert isinstance(outcome, LineError)
            if outcome.resubmit and waiter.submissions <= self.max_resubmits:
                again.append(waiter)
                if outcome.kind != "unanswered":  # an error answered: a retry, counted as the synchronous path does
                    self.model.stats.count_error(outcome.kind)
                    self.model.stats.retries += 1
            else:
                tries = f" (after {waiter.submissions} batches)" if outcome.resubmit else ""
                self._fail(waiter, outcome.kind, f"{outcome.message}{tries}")
        if again:
            self.counters.requests.resubmitted += len(again)
            for waiter in again:
                self._enqueue(waiter)

    def _price(self, result: ChatResult, entry: dict[str, Any]) -> None:
        """The batch price of one answer, added to the counters and to its batch's record (the state file keeps
        what every batch of the run cost, whichever process took its answers: `batch_state.run_costs`)."""
        full = self.model.prices.cost(self.model.model, result.prompt_tokens, result.completion_tokens)
        if full is None:
            return
        result.cost_usd = full * BATCH_DISCOUNT
        c = self.counters
        c.sync_cost_usd = (c.sync_cost_usd or 0.0) + full
        c.cost_usd = (c.cost_usd or 0.0) + result.cost_usd
        entry["sync_cost_usd"] = entry.get("sync_cost_usd", 0.0) + full
        entry["cost_usd"] = entry.get("cost_usd", 0.0) + result.cost_usd

    def _fail(self, waiter: _Waiter, kind: str, message: str) -> None:
        self.model.stats.count_error(kind)
        self.counters.requests.failed += 1
        if not waiter.future.done():
            waiter.future.set_result(CallFailure(redact(message), kind, max(1, waiter.submissions),
                                                 time.perf_counter() - waiter.started))

    def _progress(self) -> None:
        """One progress line when something changed (while nothing does, `_waiting_line` says what is awaited)."""
        c = self.counters
        if self._first_submit is not None:
            c.waited_s = time.perf_counter() - self._first_submit
        state = (c.batches.submitted, c.batches.attached, len(self._open), c.batches.ended, c.requests.answered,
                 c.requests.failed)
        if state == self._shown:
            return
        self._shown = state
        log.info("%s", self._counts_line())

    def _counts_line(self) -> str:
        return self.counters.line(self.model.spec, len(self._open))

    def _waiting_line(self) -> str | None:
        """Every `waiting.EVERY_S` while calls wait on batches: which batches, and whether the provider answers
        (an unreachable one: since when, the last error, how many polls are left before the calls are given up);
        None once nothing waits."""
        if not self._open:
            return None
        if self._first_submit is not None:
            self.counters.waited_s = time.perf_counter() - self._first_submit
        ids = [o.entry.get("batch_id") or f"chunk {o.entry['chunk']} (being sent)" for o in self._open.values()]
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        calls = sum(len(o.waiters) for o in self._open.values())
        if self._unreachable is not None:
            since, error = self._unreachable
            how = (f"the provider has not answered for {time.perf_counter() - since:.0f} s ({error}); the batches "
                   "stay recorded, --resume re-attaches")
        else:
            status = {str(o.entry["provider_status"]) for o in self._open.values() if o.entry.get("provider_status")}
            how = f"provider status {', '.join(sorted(status))}" if status else "not polled yet"
        return f"{self._counts_line()}; waiting for {calls} calls in {shown}: {how}"

    # -- failure and shutdown --------------------------------------------------------------------------------

    async def _guard(self, loop: Any) -> None:
        """A background loop's error (a refused key, a refused batch) reaches every caller waiting."""
        try:
            await loop
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._error = exc
            waiting = [*self._intake, *(w for o in self._open.values() for w in o.waiters.values())]
            for waiter in waiting:
                if not waiter.future.done():
                    waiter.future.set_exception(exc)

    async def aclose(self) -> None:
        """Stop polling; batches still open stay recorded (and running on the provider) for a resume."""
        await self._heartbeat.aclose()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.provider.aclose()

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider.name, "state_file": str(self.state_path) if self.state_path else None,
                "max_requests": self.max_requests, "max_bytes": self.max_bytes, "poll_s": self.poll_s,
                **self.counters.report(len(self._open))}


def make_batcher(backend: str, api: Any, model: Any, options: dict[str, Any], stored: dict[str, Any]) -> Batcher:
    """Batch mode for `model` from the `batch*` options; `stored` (the backend options without secrets) goes
    into the state file, so `tailor batch status|cancel RUN` can reach the provider again."""
    if backend not in BATCH_APIS:
        raise ConfigError(f"batch=true: the {backend} backend has no batch API (batch mode works with: "
                          f"{', '.join(BATCH_APIS.names())})")
    given = {k: v for k, v in options.items() if v is not None}
    max_requests = as_int("batch_max_requests", given["batch_max_requests"], minimum=1) \
        if "batch_max_requests" in given else None
    max_bytes = as_int("batch_max_bytes", given["batch_max_bytes"], minimum=1) if "batch_max_bytes" in given else None
    return Batcher(BATCH_APIS.get(backend)(api), model, options=stored,
                   poll_s=as_float("batch_poll_s", given.get("batch_poll_s", DEFAULT_POLL_S), minimum=0.0),
                   wait_s=as_float("batch_wait_s", given.get("batch_wait_s", DEFAULT_WAIT_S), minimum=0.0),
                   max_requests=max_requests, max_bytes=max_bytes, max_resubmits=model.max_retries)
