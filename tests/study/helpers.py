"""The demo's illustrative backend with every attempt counted (the full messages), and the tests' study.yaml."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from tailorbench.humanstudy.demo_model import IllustrativeAPI
from tailorbench.models.backends import BACKENDS
from tailorbench.models.base import ChatResult, GenParams, Message
from tailorbench.models.model import CallError

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "tailorbench" / "threestage" / "example"


class StudyScriptedAPI(IllustrativeAPI):
    backend = "studyscripted"
    #: every attempt of every instance
    attempts: list[str] = []  # noqa: RUF012

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        StudyScriptedAPI.attempts.append(json.dumps(list(messages), sort_keys=True))
        if os.environ.get("STUDY_TEST_FAIL") == "1":
            raise CallError("client", "HTTP 400: refused by the test", retryable=False)
        return await super().generate(messages, params)


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
