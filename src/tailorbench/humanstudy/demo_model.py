"""The illustrative model of `tailor study demo` (backend `illustrative:NAME`, registered only by the demo and
the tests): it answers each stage verb's prompt in the shape the verb asks for — attributes as JSON, YES/NO, a
digit 1..5, an answer text — decided by a hash of the prompt, so the bundled example study runs end to end with
no model and no network. Nothing it says is a model's judgment: figures computed on it are illustrative only."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from tailorbench.models.base import ChatResult, GenParams, Message

BACKEND = "illustrative"


class IllustrativeAPI:
    backend = BACKEND
    supports_logprobs = False
    remote = True
    public_base_url = None

    def __init__(self, model: str, *, spec: str = "") -> None:
        self.model = model
        self.spec = spec or f"{BACKEND}:{model}"

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        system = messages[0]["content"] if len(messages) > 1 else ""
        text = messages[-1]["content"]
        whole = json.dumps(list(messages), sort_keys=True, ensure_ascii=False)
        h = hashlib.sha256(f"{self.model}\x1f{whole}".encode()).hexdigest()
        if system.startswith("You read a"):  # the extractor (threestage/extraction/templates/extract.jinja)
            answer = json.dumps({"attributes": [{"text": f"The user has trait {h[i:i + 4]}.", "evidence": [1]}
                                                for i in range(0, 12, 4)]})
        elif "known fact" in system:  # the relevance judge
            answer = "YES" if int(h[0], 16) < 7 else "NO"
        elif text.startswith("A user with this trait"):  # the A/B judge
            answer = str(1 + int(h[0], 16) % 5)
        else:  # generic and personalized answers
            answer = f"An answer {h[:10]}."
        return ChatResult(text=answer, raw=answer, finish_reason="stop", prompt_tokens=len(text) // 4,
                          completion_tokens=4)

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model}


def register() -> None:
    from tailorbench.models.backends import BACKENDS

    BACKENDS.add(BACKEND, IllustrativeAPI, replace=True)
