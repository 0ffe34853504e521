"""Battles: which contestants meet (uniform over the pairs, seeded by the arena's seed, the participant and the
battle's number, so a battle's draw can be recomputed), which side each is shown on (drawn and recorded), when a
gold battle is shown instead, the prompts (the profile in the system prompt of a contestant with `profile: true`,
nothing of it for the others), and the generation of both answers, streamed to any page watching them.

Generation runs on the server's event loop, not in the request that asked: a participant who reloads the page or
loses the connection finds the answers still arriving (each side's pieces are kept in memory until it ends, and in
the database once it has), and two answers are generated at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from tailorbench.arena.config import ArenaConfig
from tailorbench.arena.demo_model import PROFILE_MARK
from tailorbench.arena.store import ArenaStore
from tailorbench.logs import get_logger
from tailorbench.models.base import CallFailure, ChatResult, GenParams, Message

SIDES = ("a", "b")
#: the system prompt of every contestant (the personalized one adds the profile after it)
SYSTEM = "You are a helpful assistant. Answer the user's question."


def _rng(config: ArenaConfig, pid: str, seq: int, what: str) -> random.Random:
    return random.Random(f"{config.battles.seed}:{pid}:{seq}:{what}")


def draw_pair(config: ArenaConfig, pid: str, seq: int) -> tuple[str, str, bool]:
    """(model_a, model_b, a_left) of the participant's battle number `seq`: a pair uniformly over every
    contestant pair, and the side model_a is shown on, each from its own seeded draw."""
    pairs = config.pairs
    model_a, model_b = pairs[_rng(config, pid, seq, "pair").randrange(len(pairs))]
    return model_a, model_b, _rng(config, pid, seq, "side").random() < 0.5


def gold_for(config: ArenaConfig, pid: str, seq: int) -> tuple[str, str, str, str] | None:
    """Battle number `seq` is a gold battle at the config's rate (never the first): (question, better side,
    answer a, answer b), the better answer on a drawn side; None for an ordinary battle."""
    gold = config.gold
    rng = _rng(config, pid, seq, "gold")
    if seq <= 1 or not gold.battles or rng.random() >= gold.rate:
        return None
    item = gold.battles[rng.randrange(len(gold.battles))]
    if rng.random() < 0.5:
        return item.question, "a", item.better, item.worse
    return item.question, "b", item.worse, item.better


def repeat_pick(config: ArenaConfig, pid: str, seq: int) -> Any:
    """Battle number `seq` shows an earlier battle again at `battles.repeat_rate` (from the third battle on):
    a chooser for `ArenaStore.repeat_battle` (an index among n earlier battles; `None` -> the new left side),
    seeded per participant and battle; None for an ordinary battle."""
    rng = _rng(config, pid, seq, "repeat")
    if seq <= 2 or rng.random() >= config.battles.repeat_rate:
        return None

    def pick(n: int | None) -> int | bool:
        return rng.random() < 0.5 if n is None else rng.randrange(n)

    return pick


def render_profile(config: ArenaConfig, profile: dict[str, Any]) -> str:
    """The participant's answers as `  label: value` lines (only the fields they answered)."""
    lines = []
    for f in config.profile.fields:
        value = profile.get(f.section, {}).get(f.key)
        if value not in (None, ""):
            lines.append(f"  {f.label}: {value}")
    return "\n".join(lines)


def messages_for(config: ArenaConfig, contestant: str, profile: dict[str, Any], question: str) -> list[Message]:
    """The request a contestant answers: the system prompt (with the profile when the contestant has
    `profile: true` and the participant gave any) and the question."""
    system = SYSTEM
    if config.contestant(contestant).profile:
        rendered = render_profile(config, profile)
        if rendered:
            system += f"\n{PROFILE_MARK}\n{rendered}\nUse what is relevant to the question."
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


@dataclass
class Live:
    """One answer being generated: its pieces so far, and whether (and how) it ended."""

    parts: list[str] = field(default_factory=list)
    ended: str | None = None  # complete | failed
    error: str | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def push(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class Generator:
    """The contestants' models (built on first use, on the server's loop) and the battles being answered."""

    def __init__(self, config: ArenaConfig, store: ArenaStore, events: Any = None) -> None:
        self.config = config
        self.store = store
        self.events = events  # privacy.EventLog or None
        self.models: dict[str, Any] = {}
        self.live: dict[tuple[str, str], Live] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.params = GenParams(temperature=config.models.temperature, max_tokens=config.models.max_tokens)

    def model(self, name: str) -> Any:
        if name not in self.models:
            from tailorbench.models.backends import make_chat_model

            c = self.config.contestant(name)
            self.models[name] = make_chat_model(c.model, {**self.config.models.options, **c.options})
        return self.models[name]

    def start(self, ref: str) -> None:
        """Generate the battle's two answers in the background (a gold battle has its answers already)."""
        for side in SIDES:
            self.live[(ref, side)] = Live()
        task = asyncio.get_running_loop().create_task(self._both(ref))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _both(self, ref: str) -> None:
        battle = await asyncio.to_thread(self.store.battle, ref)  # the database off the event loop
        if battle is None:
            return
        pid, profile = await asyncio.to_thread(self.store.profile_of, battle["participant_id"])
        await asyncio.gather(*(self._one(ref, side, battle[f"model_{side}"], profile, battle["question"])
                               for side in SIDES))
        if self.events is not None:
            done = await asyncio.to_thread(self.store.battle, ref)
            self.events.write({"event": "battle", "ref": ref, "pid": pid,
                               "status": None if done is None else done["status"]})
        for side in SIDES:
            self.live.pop((ref, side), None)

    async def _one(self, ref: str, side: str, contestant: str, profile: dict[str, Any], question: str) -> None:
        from tailorbench.arena.answers import answer_events, request_key
        from tailorbench.models.streaming import StreamDone, TextDelta

        live = self.live[(ref, side)]
        model = self.model(contestant)
        messages = messages_for(self.config, contestant, profile, question)
        result: ChatResult | CallFailure = CallFailure("the answer ended without a result", "other")
        started = time.perf_counter()
        try:
            async for event in answer_events(model, messages, self.params):
                if isinstance(event, TextDelta):
                    live.parts.append(event.text)
                    live.push()
                elif isinstance(event, StreamDone):
                    result = event.result
        except Exception as exc:  # a model object that raises anyway: a failed answer, counted like any other
            result = CallFailure(f"{type(exc).__name__}: {exc}", "other", 1, time.perf_counter() - started)
        key = request_key(model, messages, self.params)
        if isinstance(result, ChatResult):
            text = result.text if result.text else "".join(live.parts)
            await asyncio.to_thread(self.store.finish_side, ref, side, text, None, key, float(result.cost_usd or 0.0))
            live.parts[:] = [text]
            live.ended = "complete"
        else:
            get_logger(__name__).warning("arena: an answer of %s failed: %s", contestant, result.error)
            await asyncio.to_thread(self.store.finish_side, ref, side, None, f"{result.kind}: {result.error}", key, 0.0)
            live.ended, live.error = "failed", result.kind
        live.push()

    async def follow(self, ref: str, side: str, poll_s: float = 0.5) -> AsyncIterator[tuple[str, str]]:
        """The events of one side for a page: (`delta`, text) pieces, then (`done`, "") or (`failed`, kind). A
        side this process is generating is followed live; one already ended comes whole from the database; one
        another process is generating is polled."""
        live = self.live.get((ref, side))
        sent = 0
        while live is not None:
            waiter = live.changed
            while sent < len(live.parts):
                yield "delta", live.parts[sent]
                sent += 1
            if live.ended is not None:
                yield ("done", "") if live.ended == "complete" else ("failed", live.error or "error")
                return
            await waiter.wait()
        while True:
            battle = await asyncio.to_thread(self.store.battle, ref)
            if battle is None:
                yield "failed", "gone"
                return
            status = battle[f"status_{side}"]
            if status == "complete":
                text = battle[f"answer_{side}"] or ""
                if sent == 0 and text:
                    yield "delta", text
                yield "done", ""
                return
            if status == "failed" or battle["status"] == "dropped":
                yield "failed", (battle[f"error_{side}"] or "dropped").split(":", 1)[0]
                return
            if (ref, side) in self.live:
                async for item in self.follow(ref, side, poll_s):
                    yield item
                return
            await asyncio.sleep(poll_s)

    async def warm(self) -> None:
        """Build every contestant's model and its client before the first battle. Left to the first call, the
        backend's SDK is imported on the event loop (openai: a second or more on a busy machine), and every
        answer the server is streaming stalls meanwhile: the first battles after each start paid it in time to
        first token (perf/arena_load.py). The imports and clients are made in a thread; a model whose client
        cannot be made (no key) fails later, on its first call, as before."""
        import importlib

        await asyncio.to_thread(importlib.import_module, "tailorbench.models.backends")
        for contestant in self.config.contestants:
            try:
                model = self.model(contestant.name)
                client = getattr(getattr(model, "api", None), "client", None)
                if callable(client):
                    await asyncio.to_thread(client)
            except Exception as exc:  # counted on the first call, as an unusable model always was
                get_logger(__name__).warning("arena: %s could not be prepared: %s", contestant.name, exc)

    async def aclose(self) -> None:
        for task in list(self.tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        for model in self.models.values():
            with contextlib.suppress(Exception):
                await model.aclose()
