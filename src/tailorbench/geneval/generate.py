"""Generation: a model answers each sampled question with the context of a setting, through `models/` (so every
answer is cached: a re-run or a resumed run makes no call it already made). One line per case and role in
generations.jsonl, written batch by batch; a failed call is a `failed` line with its error, never dropped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from tailorbench.datasets.rows import last_per_key, read_appended_jsonl
from tailorbench.evaluate.settings import ContextBuilder
from tailorbench.files import appending
from tailorbench.geneval.mentions import find_mentions, value_phrases
from tailorbench.models.base import CallFailure, ChatModel, ChatRequest, ChatResult, GenParams, Message
from tailorbench.personas import cjk_share
from tailorbench.schema import PairCase

GENERATIONS = "generations.jsonl"
#: the judge's verdicts of a gen-eval run, one line per case x order
VERDICTS = "verdicts.jsonl"
#: roles of a generation line: the model under test, and the reference (a model, or the `chosen` answer)
MODEL, REFERENCE = "model", "reference"

_SYSTEM = {
    "en": ("You are a helpful assistant.", "You are a helpful assistant. What you know about the user:\n\n{context}\n\n"
           "Answer the user's question in the way that suits this user best."),
    "zh": ("你是一个乐于助人的助手。",
           "你是一个乐于助人的助手。以下是你对用户的了解：\n\n{context}\n\n请用最适合这位用户的方式回答他们的问题。"),
}


def language_of(case: PairCase) -> str:
    """The same rule the runner uses for judge prompts: Chinese when the question is mostly CJK."""
    return "zh" if cjk_share(case.question[:200]) > 0.3 else "en"


def messages_for(case: PairCase, context: str | None) -> list[Message]:
    """The prompt of one generation: a system message carrying the setting's context, then the question."""
    plain, with_context = _SYSTEM[language_of(case)]
    system = with_context.format(context=context) if context else plain
    return [{"role": "system", "content": system}, {"role": "user", "content": case.question}]


def generation_key(row: dict[str, Any]) -> tuple[str, str]:
    """What a line of generations.jsonl answers: (case id, role)."""
    return row["case_id"], row["role"]


def verdict_key(row: dict[str, Any]) -> tuple[str, str]:
    """What a line of verdicts.jsonl answers: (case id, order)."""
    return row["case_id"], row["order"]


def read_rows(path: Path, key: Callable[[dict[str, Any]], tuple[str, str]]) -> list[dict[str, Any]]:
    """The lines of generations.jsonl (`generation_key`) or verdicts.jsonl (`verdict_key`), the last per key
    (the predictions format rule, `rows.last_per_key`: a failed call retried by `--resume` appends its new
    line); a torn last line (kill -9) is cut off."""
    rows: list[dict[str, Any]] = read_appended_jsonl(path)
    return last_per_key(rows, key)


def _base_row(case: PairCase, role: str, source: str) -> dict[str, Any]:
    return {"case_id": case.id, "role": role, "source": source, "split": case.split, "tier": case.tier,
            "user_id": case.user_id, "language": language_of(case)}


def _with_answer(row: dict[str, Any], answer: str, case: PairCase, phrases: Callable[[PairCase], Any]) -> None:
    row["answer"] = answer
    row["length"] = len(answer)
    row["mentions"] = find_mentions(answer, phrases(case)) if answer else []


class PhraseCache:
    """Persona value phrases per user, computed once (a user's profile is shared by all their cases)."""

    def __init__(self) -> None:
        self._by_user: dict[str, tuple[dict[str, Any], Any]] = {}

    def __call__(self, case: PairCase) -> Any:
        hit = self._by_user.get(case.user_id)
        if hit is None or not (hit[0] is case.persona or hit[0] == case.persona):
            hit = (case.persona, value_phrases(case.persona))
            self._by_user[case.user_id] = hit
        return hit[1]


def chosen_rows(cases: Sequence[PairCase], phrases: PhraseCache) -> list[dict[str, Any]]:
    """Reference lines for `--reference chosen`: the benchmark's human-preferred answers, so the run
    directory holds every text that was judged."""
    rows = []
    for case in cases:
        row = _base_row(case, REFERENCE, "chosen")
        row.update(status="ok", error=None, finish_reason=None, truncated=False, prompt_tokens=0,
                   completion_tokens=0, cost_usd=None, latency_s=None, cached=False)
        _with_answer(row, case.chosen, case, phrases)
        rows.append(row)
    return rows


async def generate(
    model: ChatModel,
    role: str,
    cases: Sequence[PairCase],
    context: ContextBuilder,
    setting_options: Any,
    params: GenParams,
    out: Path,
    phrases: PhraseCache,
    batch_size: int = 64,
    on_batch: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Answer every case with `model`, appending one line per case to `out` after each batch."""
    requests = [ChatRequest(messages_for(c, context(c, setting_options)), params) for c in cases]
    if requests and not all(model.is_cached(r.messages, r.params) for r in requests):
        await model.preflight()  # fail fast (server, key, model name) unless everything is cached
    written: list[dict[str, Any]] = []
    streamed = getattr(model, "batcher", None) is not None  # batch mode: answers land a provider batch at a time
    with appending(out) as handle:
        for start in range(0, len(cases), batch_size):
            chunk = list(cases[start : start + batch_size])
            if streamed:
                landed = _as_they_land(model, chunk, requests[start : start + batch_size])
            else:
                landed = _all_at_once(model, chunk, requests[start : start + batch_size])
            async for group in landed:
                rows = [_row(case, outcome, role, model.spec, phrases) for case, outcome in group]
                handle.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
                handle.flush()
                written.extend(rows)
                if on_batch is not None:
                    on_batch(len(rows))
    return written


Landed = AsyncIterator[list[tuple[PairCase, ChatResult | CallFailure]]]


async def _all_at_once(model: ChatModel, cases: list[PairCase], requests: list[ChatRequest]) -> Landed:
    """One group: the window's answers together (a local model batches them)."""
    yield list(zip(cases, await model.chat_many(requests)))


async def _as_they_land(model: ChatModel, cases: list[PairCase], requests: list[ChatRequest]) -> Landed:
    """A group per moment answers land (batch mode: one provider batch's), so each is written as its batch ends."""

    async def one(case: PairCase, request: ChatRequest) -> tuple[PairCase, ChatResult | CallFailure]:
        return case, await model.chat(request.messages, request.params)

    pending = {asyncio.ensure_future(one(c, r)) for c, r in zip(cases, requests)}
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            yield [fut.result() for fut in done]
    finally:
        for fut in pending:
            fut.cancel()


def _row(case: PairCase, outcome: ChatResult | CallFailure, role: str, spec: str,
         phrases: PhraseCache) -> dict[str, Any]:
    """One line of generations.jsonl: the answer with its accounting, or the failure with its error."""
    row = _base_row(case, role, spec)
    if isinstance(outcome, CallFailure):
        row.update(status="failed", answer=None, length=None, mentions=[], finish_reason=None,
                   truncated=False, error=f"{outcome.kind}: {outcome.error}", prompt_tokens=0,
                   completion_tokens=0, cost_usd=None, latency_s=outcome.latency_s, cached=False)
        return row
    answer = outcome.text.strip()
    row.update(status="ok" if answer else "empty", error=None if answer else "empty answer",
               finish_reason=outcome.finish_reason, truncated=outcome.finish_reason == "length",
               prompt_tokens=outcome.prompt_tokens, completion_tokens=outcome.completion_tokens,
               cost_usd=outcome.cost_usd, latency_s=outcome.latency_s, cached=outcome.cached)
    _with_answer(row, answer, case, phrases)
    return row
