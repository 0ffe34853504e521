"""The load client of perf/arena_load.py: simulated arena participants as plain HTTP clients (httpx on asyncio,
no browser), and the same client's direct streaming request to the stub, so the two times to first token it
compares are measured the same way in the same process.

A participant consents, answers the one profile question, then loops: wait 5-15 s (seeded), ask a question of
its own (numbered, so no answer comes from the call cache or from a request in flight), read both answers'
event streams at once, vote. At the moment it asks, it also sends one streaming request straight to a stub (the
control). A time to first token is from sending the request that asks for answers (POST /ask for the arena,
POST /v1/chat/completions for the stub) to the first answer text (the first `delta` event, the first content
chunk), so the arena's figure includes the redirect, the battle page and opening the event stream.

A server that goes away (kill -9) is met as a browser meets it: an event stream that breaks is opened again
once the server answers (its text read from the start, as the page does on reload); a vote whose answer never
came is sent again (the server stores a battle's vote once); an ask whose answer never came becomes GET /ask,
which leads back to the open battle. Every vote the server confirmed (its 303 to /ask) is recorded by battle.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

NONCE = re.compile(r'name="nonce" value="([^"]+)"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
#: errors that mean "the server is not there right now" (killed, restarting)
GONE = (httpx.TransportError, OSError)


@dataclass
class Tally:
    """What all participants saw: TTFT samples (seconds) and the vote bookkeeping of the kill check."""

    arena_ttft: list[float] = field(default_factory=list)
    stub_ttft: list[float] = field(default_factory=list)
    #: (arena side TTFT - the same battle's direct stub TTFT), one per answer
    paired: list[float] = field(default_factory=list)
    #: POST /ask -> the battle page received (the part of the arena's time before its event stream opens)
    ask_to_page: list[float] = field(default_factory=list)
    confirmed: dict[str, int] = field(default_factory=dict)  # battle ref -> votes the server confirmed for it
    battles: int = 0
    failed_battles: int = 0
    stream_reopened: int = 0
    vote_resent: int = 0
    errors: int = 0
    measuring: bool = True


def _think(rng: random.Random) -> float:
    return rng.uniform(5.0, 15.0)


async def first_token_stub(client: httpx.AsyncClient, url: str, question: str) -> float | None:
    """Seconds from sending a streaming chat request to the stub to its first content chunk; the stream is read
    to its end (as the arena reads its own), None when it failed."""
    body = {"model": "stub", "stream": True, "messages": [{"role": "user", "content": question}]}
    start = time.perf_counter()
    first = None
    try:
        async with client.stream("POST", url, json=body, timeout=60.0) as response:
            async for line in response.aiter_lines():
                if first is None and line.startswith("data: {") and '"content"' in line:
                    first = time.perf_counter() - start
    except GONE:
        return None
    return first


async def read_answer(client: httpx.AsyncClient, path: str, tally: Tally, alive: Any) -> tuple[float | None, str]:
    """One pane's event stream read to its end: (seconds from now to its first `delta`, `done` | `failed`).
    A broken stream is opened again once the server is back (the time is then None: not a clean sample)."""
    start = time.perf_counter()
    first: float | None = None
    clean = True
    while True:
        name = None
        try:
            async with client.stream("GET", path, timeout=120.0) as response:
                if response.status_code != 200:
                    return None, "failed"
                async for line in response.aiter_lines():
                    if line.startswith("event:"):
                        name = line[6:].strip()
                    elif line.startswith("data:") and name == "delta" and first is None:
                        first = time.perf_counter() - start
                    elif line.startswith("data:") and name in ("done", "failed"):
                        return (first if clean else None), name
        except GONE:
            pass
        clean = False
        tally.stream_reopened += 1
        await alive()


async def _send(client: httpx.AsyncClient, method: str, path: str, alive: Any, **kw: Any) -> httpx.Response:
    """A request sent again until the server answers (it may be restarting)."""
    while True:
        try:
            return await client.request(method, path, **kw)
        except GONE:
            await alive()


async def participant(base: str, stub_urls: list[str], index: int, seed: int, tally: Tally, stop: asyncio.Event,
                      alive: Any) -> None:
    """One participant until `stop` is set (the battle in progress is finished and voted first)."""
    rng = random.Random(f"{seed}:{index}")
    async with httpx.AsyncClient(base_url=base, headers={"Origin": base}, timeout=60.0) as c, \
            httpx.AsyncClient(timeout=60.0) as direct:
        page = await _send(c, "GET", "/", alive)
        nonce = NONCE.search(page.text)
        if nonce is None:
            raise RuntimeError(f"participant {index}: no consent form ({page.status_code})")
        await _send(c, "POST", "/consent", alive, data={"nonce": nonce.group(1), "consent": "yes"})
        page = await _send(c, "GET", "/profile", alive)
        csrf = CSRF.search(page.text)
        if csrf is None:
            raise RuntimeError(f"participant {index}: no profile form ({page.status_code})")
        token = csrf.group(1)
        await _send(c, "POST", "/profile", alive, data={"csrf": token, "f_age": rng.choice(["18-24", "35-44"])})
        n = 0
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), _think(rng))
                return
            except asyncio.TimeoutError:
                pass
            n += 1
            await battle(c, direct, stub_urls[n % len(stub_urls)], f"p{index} q{n}", token, rng, tally, alive)


async def battle(c: httpx.AsyncClient, direct: httpx.AsyncClient, stub_url: str, tag: str, token: str,
                 rng: random.Random, tally: Tally, alive: Any) -> None:
    """Ask, read both answers (timing the first token of each) beside one direct stub request, vote."""
    question = f"({tag}) What should I plan for a quiet weekend with {rng.choice(['tea', 'books', 'friends'])}?"
    measuring = tally.measuring
    control = asyncio.create_task(first_token_stub(direct, stub_url, question))
    start = time.perf_counter()
    try:
        page = await c.post("/ask", data={"csrf": token, "question": question}, follow_redirects=True)
    except GONE:
        await alive()
        page = await _send(c, "GET", "/ask", alive, follow_redirects=True)
    ref = page.url.path.rsplit("/", 1)[-1] if page.url.path.startswith("/b/") else None
    if ref is None:  # no battle page (the kill fell between the ask and its answer, with nothing stored)
        await control
        tally.errors += 1
        return
    waited = time.perf_counter() - start
    answers = await asyncio.gather(*(read_answer(c, f"/b/{ref}/s/{pane}", tally, alive) for pane in "12"))
    stub_first = await control
    tally.battles += 1
    if any(state != "done" for _first, state in answers):
        tally.failed_battles += 1
        return
    if measuring and stub_first is not None:
        tally.stub_ttft.append(stub_first)
        tally.ask_to_page.append(waited)
        for first, _state in answers:
            if first is not None:
                tally.arena_ttft.append(waited + first)
                tally.paired.append(waited + first - stub_first)
    await vote(c, ref, token, rng, tally, alive)


async def vote(c: httpx.AsyncClient, ref: str, token: str, rng: random.Random, tally: Tally, alive: Any) -> None:
    """POST the vote; sent again while no answer comes; a 303 to /ask is the server's confirmation."""
    data = {"csrf": token, "choice": rng.choice("1234"), "confidence": rng.choice("123")}
    while True:
        try:
            response = await c.post(f"/b/{ref}/vote", data=data)
            break
        except GONE:
            tally.vote_resent += 1
            await alive()
    if response.status_code == 303 and response.headers.get("location", "").endswith("/ask"):
        tally.confirmed[ref] = tally.confirmed.get(ref, 0) + 1
    else:
        tally.errors += 1


def quantiles(values: list[float]) -> dict[str, float | int | None]:
    """p50/p95/p99 and the count, in milliseconds (numpy's default linear interpolation)."""
    import numpy as np

    if not values:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None}
    arr = np.asarray(values) * 1000.0
    p50, p95, p99 = (float(np.percentile(arr, q)) for q in (50, 95, 99))
    return {"n": len(values), "p50_ms": round(p50, 1), "p95_ms": round(p95, 1), "p99_ms": round(p99, 1)}


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True)
