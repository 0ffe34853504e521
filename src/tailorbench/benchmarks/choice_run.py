"""Multiple-choice runs (run kind `multiple-choice`): a model answers every item of a choice benchmark (PrefEval,
PersonaMem) in the benchmark's own messages, the benchmark's own scorer reads each answer, and `results.json`
gives its accuracy overall, per split and per tier with bootstrap intervals.

Not the pairwise judge loop: a pick among all options is not a choice between two answers (the pair view of the
same items goes through `tailor eval`). Like every run, it streams: one line per item appended and flushed per
batch to predictions.jsonl, a torn last line cut off on resume, items already answered skipped (a failed call
is asked again, its new line appended: the last line per item counts), `run.lock` held;
every call goes through `models/` (cache, retries, accounting), so a re-run makes no call at all.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import orjson

from tailorbench.aio import run_sync
from tailorbench.benchmarks.choice_report import MULTIPLE_CHOICE
from tailorbench.benchmarks.choice_results import KIND, compute_results
from tailorbench.benchmarks.protocols import ChoiceProtocol, choice_protocol, record, scorer_for
from tailorbench.benchmarks.run_pages import MANIFEST, PREDICTIONS, RESULTS, item_key, read_items
from tailorbench.benchmarks.scoring import SCORERS
from tailorbench.datasets.choice import ChoiceItem, ItemSet, load_choice_items
from tailorbench.datasets.rows import done_keys, fingerprint_files
from tailorbench.errors import ConfigError
from tailorbench.evaluate.lock import RunLock
from tailorbench.evaluate.runner import library_versions
from tailorbench.files import appending, ensure_dir, write_json_atomic
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import CallFailure, ChatModel, ChatRequest, ChatResult, GenParams
from tailorbench.redact import redact_obj
from tailorbench.run_kinds import write_reports
from tailorbench.schema import Message
from tailorbench.version import __version__

#: item fields a prediction line keeps (what the results break down by)
META_KEYS = ("topic", "turns", "question_type", "context_length_in_tokens", "distance_to_ref_in_blocks")


@dataclass
class ChoiceConfig:
    """Everything that decides a multiple-choice run's predictions (stored in its manifest)."""

    data: str
    model: str
    layout: str | None = None
    #: the layout's options (PrefEval: turns, forms, topics, seed, reminder; PersonaMem: contexts)
    data_options: dict[str, Any] = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)
    max_tokens: int | None = 512
    temperature: float = 0.0
    batch_size: int = 32
    limit: int | None = None
    skip_invalid: bool = False
    seed: int = 0
    n_boot: int = 1000
    #: `default` or `authors` (benchmarks/protocols.py): the authors' fixes the generation settings above
    protocol: str = "default"
    #: PersonaMem's upstream scorer version (041d82a when None, or 214bc36)
    scorer_version: str | None = None


class Prompted(Protocol):
    """What a benchmark prompt carries (a `ChoiceItem`, PrefEval's `GenerationItem`)."""

    @property
    def system(self) -> str | None: ...
    @property
    def warmup(self) -> str | None: ...
    @property
    def context(self) -> list[dict[str, str]]: ...
    @property
    def prompt(self) -> str: ...


def messages_for(item: Prompted, warmup_answer: str | None) -> list[Message]:
    """The messages the benchmark sends: system, the warm-up turn and the model's answer to it, the context,
    the question (PrefEval's `gpt` branch; PersonaMem's `query_llm`)."""
    out: list[Message] = [{"role": "system", "content": item.system}] if item.system else []
    if item.warmup is not None:
        out += [{"role": "user", "content": item.warmup}, {"role": "assistant", "content": warmup_answer or ""}]
    out += [{"role": m["role"], "content": m["content"]} for m in item.context]
    return [*out, {"role": "user", "content": item.prompt}]


def sample_items(items: list[ChoiceItem], limit: int | None, seed: int) -> list[ChoiceItem]:
    """A seeded sample of `limit` items in source order (all of them without a limit)."""
    if limit is None or limit >= len(items):
        return items
    keep = set(random.Random(seed).sample(range(len(items)), limit))
    return [item for n, item in enumerate(items) if n in keep]


def _row(item: ChoiceItem, outcome: ChatResult | CallFailure, warmup: str | None, scorer: str) -> dict[str, Any]:
    row: dict[str, Any] = {"item": item.id, "split": item.split, "tier": item.tier, "user_id": item.user_id,
                           "scorer": item.scorer, "answer": item.answer, "n_options": len(item.options),
                           "meta": {k: item.meta[k] for k in META_KEYS if k in item.meta}, "warmup_response": warmup}
    if isinstance(outcome, CallFailure):
        return {**row, "status": "failed", "choice": None, "correct": False, "response": None,
                "error": f"{outcome.kind}: {outcome.error}", "latency_s": outcome.latency_s}
    rule = SCORERS.get(scorer)
    score = rule(outcome.raw, item)  # the reply as the model wrote it, as the authors' scripts read it
    if outcome.text != outcome.raw:  # a reasoning block: the reading without it, where it changes the outcome
        stripped = rule(outcome.text, item)
        if (stripped.choice, stripped.correct) != (score.choice, score.correct):
            row["think_stripped"] = {"choice": stripped.choice, "correct": stripped.correct,
                                     "status": "ok" if stripped.choice is not None else "invalid"}
    return {**row, "scorer": scorer, "status": "ok" if score.choice is not None else "invalid",
            "choice": score.choice, "correct": score.correct, "parsed": score.parsed, "response": outcome.raw,
            "error": None,
            "finish_reason": outcome.finish_reason, "prompt_tokens": outcome.prompt_tokens,
            "completion_tokens": outcome.completion_tokens, "latency_s": outcome.latency_s, "cached": outcome.cached}


async def warmups(model: ChatModel, items: Sequence[Prompted], params: GenParams,
                  shape: Shape | None = None) -> dict[str, str | CallFailure]:
    """The model's answer to each distinct warm-up turn (PrefEval: the stated preference, sent alone)."""
    texts = sorted({i.warmup for i in items if i.warmup is not None})
    shape = shape or _same
    outcomes = await model.chat_many([ChatRequest(shape([{"role": "user", "content": t}]), params) for t in texts])
    return {t: o if isinstance(o, CallFailure) else o.text for t, o in zip(texts, outcomes)}


Answer = tuple[ChatResult | CallFailure, str | None]
#: the messages as a protocol sends them (PersonaMem's authors' protocol folds system messages for some models)
Shape = Callable[[list[Message]], list[Message]]


def _same(messages: list[Message]) -> list[Message]:
    return messages


@dataclass(frozen=True)
class Asking:
    """How a run asks: the answer's and the warm-up turn's generation settings and the messages' shape."""

    params: GenParams
    warmup_params: GenParams
    shape: Shape = _same


def asking(protocol: ChoiceProtocol, config: ChoiceConfig) -> Asking:
    """The default protocol takes the config's settings (a user may change them); the authors' fixes its own."""
    if protocol.name == "default":
        params = GenParams(temperature=config.temperature, max_tokens=config.max_tokens)
        return Asking(params, params)
    return Asking(protocol.params(), protocol.warmup_params(),
                  lambda messages: protocol.messages(messages, config.model))
#: (items of a batch, each one's answer and warm-up answer) -> the batch's prediction lines
RowsOf = Callable[[list[Any], list[Answer]], Awaitable[list[dict[str, Any]]]]


async def _answer_batch(model: ChatModel, chunk: Sequence[Prompted], warm: dict[str, str | CallFailure],
                        params: GenParams, shape: Shape | None = None) -> list[Answer]:
    """Each item's answer (a failed warm-up turn is the item's failure) with the warm-up answer it saw."""
    before = [warm[i.warmup] if i.warmup is not None else None for i in chunk]
    ready = [(i, b) for i, b in zip(chunk, before) if not isinstance(b, CallFailure)]
    shape = shape or _same
    outcomes = iter(await model.chat_many([ChatRequest(shape(messages_for(i, answer_text(b))), params)
                                           for i, b in ready]))
    return [(CallFailure(f"warm-up turn: {b.error}", b.kind), None) if isinstance(b, CallFailure)
            else (next(outcomes), b) for b in before]


async def answer_in_batches(model: ChatModel, items: Sequence[Prompted], params: GenParams, path: Path,
                            batch_size: int, rows_of: RowsOf, how: Asking | None = None) -> None:
    """Answer `items` batch by batch (their warm-up turns first, each distinct one once) and append each batch's
    lines (`rows_of`) to `path`, flushed; `how` (a protocol's) replaces `params` where given."""
    how = how or Asking(params, params)
    warm = await warmups(model, items, how.warmup_params, how.shape)
    with appending(path) as handle:
        for start in range(0, len(items), batch_size):
            chunk = list(items[start:start + batch_size])
            rows = await rows_of(chunk, await _answer_batch(model, chunk, warm, how.params, how.shape))
            handle.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
            handle.flush()


async def answer_items(model: ChatModel, items: Sequence[ChoiceItem], how: Asking, path: Path, batch_size: int,
                       scorer: Callable[[ChoiceItem], str]) -> None:
    """Answer and score `items` (each by the scorer `scorer` names for it), one prediction line each."""

    async def rows_of(chunk: list[ChoiceItem], answers: list[Answer]) -> list[dict[str, Any]]:
        return [_row(item, outcome, warm, scorer(item)) for item, (outcome, warm) in zip(chunk, answers)]

    await answer_in_batches(model, items, how.params, path, batch_size, rows_of, how)


def answer_text(answer: str | CallFailure | None) -> str | None:
    return answer if isinstance(answer, str) else None


def run_choice(config: ChoiceConfig, out: str | Path) -> dict[str, Any]:
    """Run (or resume: the same config, the items already answered skipped) a multiple-choice evaluation into
    the run directory `out`; returns results.json's content."""
    return run_sync(run_choice_async(config, out))


async def run_choice_async(config: ChoiceConfig, out: str | Path) -> dict[str, Any]:
    out = Path(out)
    items = load_choice_items(config.data, config.skip_invalid, config.layout, config.data_options)
    chosen = sample_items(items.items, config.limit, config.seed)
    protocol = choice_protocol(items.layout, config.protocol)
    scorer_for(items.layout, "", config.scorer_version)  # a bad version is refused before any call
    model = make_chat_model(config.model, config.model_options)
    how = asking(protocol, config)

    async def work(path: Path, done: set[str]) -> None:
        todo = [item for item in chosen if item.id not in done]
        if todo:
            await answer_items(model, todo, how, path, config.batch_size,
                               lambda item: scorer_for(items.layout, item.scorer, config.scorer_version))

    manifest = run_manifest(KIND, asdict(config), items, [model])
    manifest["protocol"] = {**record(protocol, config.scorer_version),
                            "generation": {"answer": how.params.key_dict(), "warmup": how.warmup_params.key_dict()}}
    rows, manifest = await run_streamed(out, manifest, [model], work)
    results = compute_results(manifest, rows)
    write_json_atomic(out / RESULTS, results)
    write_reports(MULTIPLE_CHOICE, [{**results, "run": out.name}], out)
    return results


def run_manifest(kind: str, config: dict[str, Any], items: ItemSet[Any], models: Sequence[ChatModel]
                 ) -> dict[str, Any]:
    """A run's manifest: its kind, config, data (layout, names, counts, fingerprint), models and versions."""
    return redact_obj({
        "kind": kind, "tailorbench_version": __version__, "created_at": datetime.now(timezone.utc).isoformat(),
        "config": config, "versions": library_versions(), "models": [m.describe() for m in models],
        "dataset_fingerprint": fingerprint_files(items.files), "status": "running",
        "data_stats": {"layout": items.layout, "splits": list(items.splits), "tiers": list(items.tiers),
                       "items": len(items.items), "skipped_rows": len(items.invalid.rows),
                       "skipped": items.invalid.as_dicts(), **items.stats},
    })


async def run_streamed(out: Path, manifest: dict[str, Any], models: Sequence[ChatModel],
                       work: Callable[[Path, set[str]], Awaitable[None]]) -> tuple[list[dict[str, Any]],
                                                                                 dict[str, Any]]:
    """The life of a run directory: `run.lock` held; a manifest with other settings or data refused; the
    predictions already there read (a torn last line cut off) and the ids of the items answered handed to
    `work`, which appends the rest (an item whose call failed is asked again); the manifest marked finished, or
    stopped with the error. Returns every prediction (the last line per item) and the manifest."""
    ensure_dir(out)
    with RunLock(out, record=False) as lock:
        path, previous = out / PREDICTIONS, out / MANIFEST
        if previous.exists():
            from tailorbench.files import load_json

            before = load_json(previous, dict, "a run manifest (a JSON object)")
            if before.get("config") != manifest["config"] or before.get("dataset_fingerprint") != manifest[
                    "dataset_fingerprint"]:
                raise ConfigError(f"{out} holds a {manifest['kind']} run with other settings or data; give another "
                                  "directory")
            manifest["created_at"] = before.get("created_at", manifest["created_at"])
        lock.record()  # not refused: the run.lock of a refused run stays as the last real holder wrote it
        write_json_atomic(previous, manifest)
        try:  # a failed call is asked again (its new line appended); an unparsed answer is kept
            await work(path, done_keys(read_items(path), item_key))
        except BaseException as exc:
            manifest.update(status="stopped", error=f"{type(exc).__name__}: {exc}")
            write_json_atomic(previous, manifest)
            raise
        finally:
            for model in models:
                await model.aclose()
        rows = read_items(path)
        manifest.update(status="finished", calls=[m.stats.as_dict() for m in models])
        write_json_atomic(previous, manifest)
        return rows, manifest
