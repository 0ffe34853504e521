"""One structured LLM call of the pipeline: render a template, ask for JSON matching a schema (through the
server's grammar mode when it has one), validate, and retry a bounded number of times.

Each retry appends the invalid output and what was wrong to the conversation, so the retry is a different
request (the call cache would otherwise hand back the same bad answer) and still deterministic, so a re-run
of a finished build is served from the cache. Every attempt's outcome is counted in `StageStats`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from tailorbench.construction.jsonschema_lite import validate
from tailorbench.models.base import CallFailure, ChatModel, GenParams, Message
from tailorbench.prompts import compile_template

TEMPLATE_DIR = Path(__file__).with_name("templates")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass
class StageStats:
    """Counters of one stage: items asked for, done, given up; attempts and why each failed."""

    items: int = 0
    ok: int = 0
    #: items without a valid output after every retry (counted against --max-failed)
    gave_up: int = 0
    attempts: int = 0
    retries: int = 0
    #: attempts whose call failed (after the model wrapper's own retries)
    call_failures: int = 0
    invalid_json: int = 0
    schema_errors: int = 0
    #: outputs cut at max_tokens (finish_reason "length"); they are also invalid_json or schema_errors
    truncated: int = 0
    #: stage-specific notes (unknown evidence ids, identical answers, pool too small ...)
    notes: dict[str, int] = field(default_factory=dict)

    def note(self, key: str, n: int = 1) -> None:
        self.notes[key] = self.notes.get(key, 0) + n

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class Outcome:
    value: dict[str, Any] | None
    errors: list[str]
    attempts: int


def load_template(name: str, override: Path | None = None) -> tuple[Any, str]:
    """(compiled Jinja template, its source text) of a stage; `override` replaces the shipped file."""
    return compile_template(override or TEMPLATE_DIR / f"{name}.jinja", f"{name} template")


def response_format(mode: str, name: str, schema: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The request field that asks the server for schema-constrained JSON."""
    if mode == "json_schema":
        return (("response_format", {"type": "json_schema",
                                     "json_schema": {"name": name, "schema": schema, "strict": True}}),)
    if mode == "llama_cpp":
        return (("response_format", {"type": "json_object", "schema": schema}),)
    if mode == "json_object":
        return (("response_format", {"type": "json_object"}),)
    return ()


def parse_json(text: str) -> Any:
    """The JSON object in a reply; tolerates a ```json fence (prompt-only mode). Raises ValueError."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    return json.loads(text)


async def call_json(
    model: ChatModel,
    messages: list[Message],
    schema: dict[str, Any],
    name: str,
    mode: str,
    params: GenParams,
    attempts: int,
    stats: StageStats,
    check: Callable[[dict[str, Any]], list[str]] | None = None,
) -> Outcome:
    """Ask until the reply parses and validates (schema, then `check`), at most `attempts` times."""
    params = replace(params, extra=params.extra + response_format(mode, name, schema))
    convo = list(messages)
    errors: list[str] = []
    for attempt in range(attempts):
        if attempt:
            stats.retries += 1
        stats.attempts += 1
        result = await model.chat(convo, params)
        if isinstance(result, CallFailure):
            # the model layer has already retried transient errors; another round would only repeat them
            stats.call_failures += 1
            errors.append(f"call failed: {result.error}")
            return Outcome(None, errors, attempt + 1)
        if result.finish_reason == "length":
            stats.truncated += 1
        try:
            value = parse_json(result.text)
        except ValueError as exc:
            stats.invalid_json += 1
            problem = f"not valid JSON ({exc})"
        else:
            problems = validate(value, schema)
            if not problems and check is not None:
                problems = check(value)
            if not problems:
                return Outcome(value, errors, attempt + 1)
            stats.schema_errors += 1
            problem = "does not match the schema: " + "; ".join(problems[:5])
        errors.append(problem)
        convo = [*convo, {"role": "assistant", "content": result.text[:4000]},
                 {"role": "user", "content": f"That reply {problem}. Reply again with only a JSON object that "
                                             f"matches the schema:\n{json.dumps(schema, ensure_ascii=False)}"}]
    return Outcome(None, errors, attempts)
