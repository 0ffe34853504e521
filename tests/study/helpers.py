"""A scripted model backend that answers every stage verb's prompt in the shape it asks for (attributes as JSON,
YES/NO, a digit, an answer text), deterministic in the prompt; every attempt is counted."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from tailorbench.models.backends import BACKENDS
from tailorbench.models.base import ChatResult, GenParams, Message
from tests.models.test_model_wrapper import ScriptedAPI

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "tailorbench" / "threestage" / "example"


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class StudyScriptedAPI(ScriptedAPI):
    """The wrapper test's scripted backend (preflight, close, describe), answering as each stage asks."""

    backend = "studyscripted"
    #: every attempt of every instance (the prompts' last message)
    attempts: list[str] = []  # noqa: RUF012

    def __init__(self, model: str, *, spec: str = "") -> None:
        super().__init__(model, spec=spec or f"studyscripted:{model}")

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        system = messages[0]["content"] if len(messages) > 1 else ""
        text = messages[-1]["content"]
        StudyScriptedAPI.attempts.append(json.dumps(list(messages), sort_keys=True))
        h = _h(text)
        if system.startswith("You read a"):
            answer = json.dumps({"attributes": [{"text": f"The user has trait {h[i:i + 4]}.", "evidence": [1]}
                                                for i in range(0, 12, 4)]})
        elif "known fact" in system:
            answer = "YES" if int(h[0], 16) < 7 else "NO"
        elif text.startswith("A user with this trait"):
            answer = str(1 + int(h[0], 16) % 5)
        else:
            answer = f"An answer {h[:10]}."
        return ChatResult(text=answer, raw=answer, finish_reason="stop", prompt_tokens=len(text) // 4,
                          completion_tokens=4)


def register() -> type[StudyScriptedAPI]:
    BACKENDS.add("studyscripted", StudyScriptedAPI, replace=True)
    StudyScriptedAPI.attempts = []
    return StudyScriptedAPI


def study_yaml(db: str | None = None, places: int = 30, quota: int = 6) -> str:
    crowd = (f"{{kind: prolific, places: {places}, quota: {quota}, reward: 1.5, completion_code: DONE1, "
             "time_limit_min: 60}")
    db_line = f"  db: {json.dumps(db)}\n" if db else ""
    return (f"name: demo\ninputs:\n  conversations: {EXAMPLE / 'conversations.jsonl'}\n"
            f"  prompts: {EXAMPLE / 'relevance_items.jsonl'}\n"
            "models:\n  extractor: studyscripted:ex\n  generator: studyscripted:gen\n"
            "  judges: {j1: 'studyscripted:judge'}\n"
            f"annotation:\n{db_line}  base_url: http://127.0.0.1:1\n"
            "statistics: {n_boot: 50, min_shared: 2, min_items: 3}\n"
            f"stages:\n  extraction: {{n: 2, crowd: {crowd}}}\n  relevance: {{n: 2, crowd: {crowd}}}\n"
            f"  incorporation: {{n: 2, crowd: {crowd}}}\n")
