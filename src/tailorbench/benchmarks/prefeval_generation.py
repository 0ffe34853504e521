"""PrefEval's generation task (run kind `prefeval-generation`): the model under test answers each question after
the preference and N filler turns (`generation_task/benchmark_generation.py`), then an LLM judge asks the four
yes/no checks of `generation_task/llm_based_evaluation_errortypes.py` (acknowledgement, violation, helpfulness,
then hallucination of the acknowledged preference), and `analyze_errors` turns the answers into the error types
and the preference-following accuracy, here per form and per filler-turn count with bootstrap intervals.

The run directory works like every run's (`choice_run.run_streamed`): one line per item, appended per batch once
its answer and its four checks are in, resumable; every call goes through `models/` and its cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.aio import run_sync
from tailorbench.benchmarks.choice_run import Answer, answer_in_batches, run_manifest, run_streamed
from tailorbench.benchmarks.generation_report import KIND, PREFEVAL_GENERATION, compute_generation_results
from tailorbench.benchmarks.run_pages import RESULTS
from tailorbench.benchmarks.scoring import (
    check_answer,
    check_prompt,
    generation_flags,
)
from tailorbench.datasets.prefeval import GenerationItem, load_generation_items
from tailorbench.datasets.prefeval_prompts import EVALUATOR_SYSTEM, MAX_GEN_TOKENS
from tailorbench.files import write_json_atomic
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import CallFailure, ChatModel, ChatRequest, GenParams
from tailorbench.run_kinds import write_reports

#: the evaluator's `max_tokens = 100` and temperature 0.0
JUDGE_PARAMS = GenParams(temperature=0.0, max_tokens=100)


@dataclass
class GenerationConfig:
    data: str
    model: str
    judge: str
    data_options: dict[str, Any] = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)
    judge_options: dict[str, Any] = field(default_factory=dict)
    #: `max_gen_tokens: 300` of config.yaml
    max_tokens: int | None = MAX_GEN_TOKENS
    temperature: float = 0.0
    batch_size: int = 16
    skip_invalid: bool = False
    seed: int = 0
    n_boot: int = 1000


def _judge_request(text: str) -> ChatRequest:
    return ChatRequest([{"role": "system", "content": EVALUATOR_SYSTEM}, {"role": "user", "content": text}],
                       JUDGE_PARAMS)


async def _checks(judge: ChatModel, items: Sequence[GenerationItem], answers: Sequence[str]
                  ) -> list[dict[str, dict[str, str]] | str]:
    """Each answer's four checks (the hallucination check after the acknowledgement, which it quotes), or the
    error of the first judge call that failed."""
    first = ("acknow", "violate", "helpful")
    requests = [_judge_request(check_prompt(m, i.preference, i.question, a)) for i, a in zip(items, answers)
                for m in first]
    replies = await judge.chat_many(requests)
    out: list[dict[str, dict[str, str]] | str] = []
    for n in range(len(items)):
        got = replies[3 * n:3 * n + 3]
        failed = next((r for r in got if isinstance(r, CallFailure)), None)
        out.append(f"{failed.kind}: {failed.error}" if failed is not None else
                   {m: check_answer(m, r.raw) for m, r in zip(first, got) if not isinstance(r, CallFailure)})
    pending = [(n, c) for n, c in enumerate(out) if isinstance(c, dict)]
    second = await judge.chat_many([_judge_request(check_prompt(
        "hallucinate", items[n].preference, items[n].question, answers[n], restatement=c["acknow"]["extract_pref"]))
        for n, c in pending])
    for (n, checks), reply in zip(pending, second):
        if isinstance(reply, CallFailure):
            out[n] = f"{reply.kind}: {reply.error}"
        else:
            checks["hallucinate"] = check_answer("hallucinate", reply.raw)
    return out


def _row(item: GenerationItem, answer: str | None, checks: dict[str, dict[str, str]] | str | None,
         error: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"item": item.id, "split": item.split, "tier": item.tier, "user_id": item.user_id,
                           "response": answer}
    if error is not None or not isinstance(checks, dict):
        return {**row, "status": "failed", "error": error or str(checks), "checks": None, "scores": None}
    return {**row, "status": "ok", "error": None, "checks": checks, "scores": asdict(generation_flags(checks))}


async def answer_and_check(model: ChatModel, judge: ChatModel, items: Sequence[GenerationItem], params: GenParams,
                           path: Path, batch_size: int) -> None:
    """Generate, check and append the rows of `items`, one batch at a time."""

    async def rows_of(chunk: list[GenerationItem], answers: list[Answer]) -> list[dict[str, Any]]:
        # the answer as the model wrote it (reasoning blocks included) is what the checks judge, as there
        answered = [(i, o.raw) for i, (o, _) in zip(chunk, answers) if not isinstance(o, CallFailure)]
        checks = dict(zip((i.id for i, _ in answered),
                          await _checks(judge, [i for i, _ in answered], [a for _, a in answered])))
        return [_row(item, None, None, f"{o.kind}: {o.error}") if isinstance(o, CallFailure)
                else _row(item, o.raw, checks[item.id], None) for item, (o, _) in zip(chunk, answers)]

    await answer_in_batches(model, items, params, path, batch_size, rows_of)


def run_generation(config: GenerationConfig, out: str | Path) -> dict[str, Any]:
    """Run (or resume) PrefEval's generation task into the run directory `out`; returns results.json."""
    return run_sync(run_generation_async(config, out))


async def run_generation_async(config: GenerationConfig, out: str | Path) -> dict[str, Any]:
    out = Path(out)
    items = load_generation_items(config.data, config.data_options, config.skip_invalid)
    model = make_chat_model(config.model, config.model_options)
    judge = make_chat_model(config.judge, config.judge_options)
    params = GenParams(temperature=config.temperature, max_tokens=config.max_tokens)

    async def work(path: Path, done: set[str]) -> None:
        todo = [item for item in items.items if item.id not in done]
        if todo:
            await answer_and_check(model, judge, todo, params, path, config.batch_size)

    manifest = run_manifest(KIND, asdict(config), items, [model, judge])
    rows, manifest = await run_streamed(out, manifest, [model, judge], work)
    results = compute_generation_results(manifest, rows)
    write_json_atomic(out / RESULTS, results)
    write_reports(PREFEVAL_GENERATION, [{**results, "run": out.name}], out)
    return results
