"""Judges with a scripted outcome, for the runner's accounting, exit codes and interrupts (the real LLM judge
against the real server is tested in test_crash_resume.py). Importing this module registers them:

- `scripted:fail`     every verdict failed (`server: HTTP 500: boom`)
- `scripted:half`     every other verdict failed (exactly half of a run)
- `scripted:invalid`  every verdict invalid (the judge's doing: never a failure)
- `scripted:raise`    the second batch raises CredentialsError (a server refusing the key)
- `scripted:sigint`   the second batch sends this process SIGINT (`sigint=2`: twice)
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Sequence

from tailorbench.errors import CredentialsError
from tailorbench.judges.base import JudgeBase, JudgeOptions, register_judge
from tailorbench.schema import JudgeInput, Verdict

BOOM = "server: HTTP 500: boom (gave up after 2 attempts)"


class ScriptedJudge(JudgeBase):
    batch_size = 4

    def __init__(self, mode: str, signals: int = 1) -> None:
        super().__init__()
        self.mode = mode
        self.signals = signals
        self.seen = 0
        self.batches = 0

    def _one(self) -> Verdict:
        self.seen += 1
        if self.mode == "fail" or (self.mode == "half" and self.seen % 2 == 0):
            return Verdict(status="failed", error=BOOM)
        if self.mode == "invalid":
            return Verdict(status="invalid", raw="no idea", error="no verdict found in the answer")
        return Verdict(choice="A")

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        self.batches += 1
        if self.batches == 2 and self.mode == "raise":
            raise CredentialsError("scripted: the server refused the credentials (HTTP 401); set OPENAI_API_KEY")
        if self.batches == 2 and self.mode == "sigint":
            for _ in range(self.signals):
                os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(0)
        return [self._one() for _ in inputs]


@register_judge("scripted")
def _scripted(arg: str | None, options: JudgeOptions) -> ScriptedJudge:
    return ScriptedJudge(arg or "ok", int(options.extra.get("sigint", 1)))
