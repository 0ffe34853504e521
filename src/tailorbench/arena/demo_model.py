"""The illustrative model of `tailor arena demo` (backend `illustrative-arena:NAME`, registered only by arena
configs labelled `illustrative: true`, the demo and the tests): it answers any question with a few sentences
decided by a hash of the request, and, when its system prompt carries the participant's profile, names one or two
of the profile's answers ("Since you mentioned ..."), so a simulated participant who prefers answers that use
their facts has something to find. Nothing it says is a model's answer: figures computed on it are illustrative.

It streams (`stream`: the answer word by word, `piece_delay_s` apart), so the arena's pages show it arriving as
a real model's. Options: `delay_s` (seconds before the first word: the tests watch a battle while its answers
are pending), `piece_delay_s`, `fail` (a share of calls, by the request's hash, that fail as a server error
would: failed answers are shown as failed and counted).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tailorbench.models.base import ChatResult, GenParams, Message

BACKEND = "illustrative-arena"
#: the system prompt's line that opens the profile (arena/battles.py writes it)
PROFILE_MARK = "What the user told us about themselves:"
_OPENINGS = ("Here is a practical way to go about it.", "A good place to start is simple.",
             "There are a few things worth weighing.", "It depends a little on your situation.")
_BODY = ("Break the task into small steps and do the first one today.",
         "Pick one option, try it for a week and adjust.",
         "Ask someone who has done it before; their shortcuts save time.",
         "Keep notes of what worked so the next attempt is easier.",
         "Set a modest budget and a deadline so the plan stays real.")


def _profile_values(system: str) -> list[str]:
    """The profile's answers from the system prompt (`  key: value` lines after PROFILE_MARK)."""
    if PROFILE_MARK not in system:
        return []
    values = []
    for line in system.split(PROFILE_MARK, 1)[1].splitlines():
        if ":" in line and not line.rstrip().endswith(":"):
            value = line.split(":", 1)[1].strip()
            if value:
                values.append(value)
    return values


def illustrative_answer(model: str, messages: Sequence[Message]) -> str:
    """The answer for `messages`: fixed by a hash of the model and the request."""
    system = messages[0]["content"] if len(messages) > 1 else ""
    h = hashlib.sha256(f"{model}\x1f{json.dumps(list(messages), sort_keys=True)}".encode()).digest()
    parts = [_OPENINGS[h[0] % len(_OPENINGS)]]
    parts += [_BODY[(h[1] + i) % len(_BODY)] for i in range(1 + h[2] % 3)]
    values = _profile_values(system)
    if values:
        picked = sorted({values[h[3 + i] % len(values)] for i in range(1 + h[5] % 2)})
        parts.insert(1, f"Since you mentioned {' and '.join(picked)}, I have tailored this to you.")
    return " ".join(parts)


class IllustrativeArenaAPI:
    backend = BACKEND
    supports_logprobs = False
    remote = True
    public_base_url = None

    def __init__(self, model: str, *, spec: str = "", delay_s: float | str = 0.0, piece_delay_s: float | str = 0.0,
                 fail: float | str = 0.0) -> None:
        self.model = model
        self.spec = spec or f"{BACKEND}:{model}"
        self.delay_s = float(delay_s)
        self.piece_delay_s = float(piece_delay_s)
        self.fail = float(fail)

    def _answer(self, messages: Sequence[Message]) -> ChatResult:
        from tailorbench.models.model import CallError

        whole = json.dumps(list(messages), sort_keys=True)
        coin = int(hashlib.sha256(f"fail\x1f{self.model}\x1f{whole}".encode()).hexdigest()[:8], 16) / 16**8
        if coin < self.fail:
            raise CallError("server", f"{self.spec}: an illustrative failure (fail={self.fail})", retryable=False)
        text = illustrative_answer(self.model, messages)
        prompt = sum(len(m["content"]) for m in messages) // 4
        return ChatResult(text=text, raw=text, finish_reason="stop", prompt_tokens=prompt,
                          completion_tokens=len(text) // 4)

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
        return self._answer(messages)

    async def stream(self, messages: Sequence[Message], params: GenParams) -> AsyncIterator[Any]:
        """The answer word by word (`TextDelta`s, `piece_delay_s` apart), then the whole `ChatResult`."""
        from tailorbench.models.streaming import TextDelta

        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
        result = self._answer(messages)
        words = result.text.split(" ")
        for i, word in enumerate(words):
            yield TextDelta(word if i == len(words) - 1 else word + " ")
            if self.piece_delay_s > 0:
                await asyncio.sleep(self.piece_delay_s)
        yield result

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "illustrative": True}


def register() -> None:
    from tailorbench.models.backends import BACKENDS

    BACKENDS.add(BACKEND, IllustrativeArenaAPI, replace=True)
