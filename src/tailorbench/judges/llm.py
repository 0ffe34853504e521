"""`llm:MODEL_SPEC`: a chat LLM as a pairwise judge (e.g. `llm:openai:gpt-4o-mini`,
`llm:openai:qwen@http://127.0.0.1:8000/v1`, `llm:hf:Qwen/Qwen2.5-0.5B-Instruct`).

Prompts are Jinja files (`judges/templates/`): English by default, Chinese when the input is Chinese, or the
user's own (`--judge-option template=FILE.jinja`). Temperature 0 by default. The verdict is read strictly (a
single letter, or a last line `Verdict: A`), then by a tolerant fallback (one unambiguous mention such as
"Answer B is better"); anything else is `invalid` with its raw text kept, and a call that fails after all
retries is `failed` with its error. `--judge-option verdict=logprobs` reads the verdict from the next-token
log-probabilities of the labels instead (exact on local HF models; top-20 alternatives on servers).
`parser=result` reads `Result: A/B` as Personalized RewardBench's scripts do, and `system_file=` / `user_file=`
give their prompt files (the question alone; `judges/verdict_rules.py`).
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.judges.base import JudgeBase, JudgeOptions, register_judge
from tailorbench.judges.verdict_rules import PARSERS, filled_messages, parse_result, read_prompt_file
from tailorbench.logs import get_logger
from tailorbench.models.backends import backend_options, make_chat_model, parse_model_spec
from tailorbench.models.base import CallFailure, ChatModel, ChatResult, GenParams, Message
from tailorbench.options import as_bool, as_float, as_int
from tailorbench.prompts import compile_template, split_messages
from tailorbench.schema import Choice, JudgeInput, Usage, Verdict, VerdictStatus

log = get_logger(__name__)

TEMPLATES_DIR = Path(__file__).parent / "templates"
DEFAULT_TEMPLATES = {"en": "pairwise_en.jinja", "zh": "pairwise_zh.jinja"}
LABELS: tuple[Choice, Choice] = ("A", "B")

#: judge options (`--judge-option KEY=VALUE`) and what they go to
JUDGE_KEYS = {"template", "verdict", "temperature", "max_tokens", "top_p", "seed", "reasoning", "reasoning_effort",
              "parser", "system_file", "user_file"}
#: backend arguments a user may not set through judge options: objects, and literal keys (which would be stored)
_NOT_OPTIONS = frozenset({"cache", "api_key", "seed"})


def model_keys(model: ChatModel) -> set[str]:
    """The options a judge passes to its model: whatever its backend's class takes (models/backends.py)."""
    backend = getattr(model, "api", model)  # the wrapper's backend (models/model.py), or a bare ChatModel
    return backend_options(type(backend)) - _NOT_OPTIONS | {"batch_size"}

_STRIP = " \t\r\n*_`'\"“”‘’.,;:!?。，；：！？()[]{}<>（）【】「」《》"
_STRICT_LINE = re.compile(
    r"^(?:final\s+)?(?:verdict|answer|choice|decision|winner|better|最终答案|答案|结论|选择|判断)\s*(?:is)?\s*[:：]?\s*"
    r"[*_`\"'\[(（【]*\s*(?:answer\s+|response\s+|option\s+|回答|选项)?([AB])\s*[*_`\"'\])）】]*[.。!！]?$",
    re.IGNORECASE,
)
_FALLBACK = re.compile(
    r"(?:\b(?:answer|response|option|assistant)\s*\(?([AB])\)?(?![A-Za-z])"
    r"|(?:回答|答案|选项|选择|选)\s*([AB])(?![A-Za-z])"
    r"|(?<![A-Za-z])([AB])\s*(?:is|更好|更个性化|更符合|胜出)"
    r"|(?:verdict|answer|choice)\s*(?:is)?\s*[:：]\s*\**\[?([AB])\b)",
    re.IGNORECASE,
)


def parse_verdict(text: str) -> tuple[Choice | None, str]:
    """(choice, how): how is `strict`, `fallback` or `invalid`. Strict: the whole answer is the letter, or the
    last line says `Verdict: X`. Fallback: every explicit mention in the text names the same letter."""
    whole = text.strip().strip(_STRIP)
    if whole in LABELS:
        return whole, "strict"
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines:
        match = _STRICT_LINE.match(lines[-1].strip("*#> ").strip())
        if match:
            return match.group(1).upper(), "strict"  # type: ignore[return-value]
        last = lines[-1].strip(_STRIP)
        if last in LABELS:
            return last, "strict"
    found = {g.upper() for m in _FALLBACK.finditer(text) for g in m.groups() if g}
    if len(found) == 1:
        return found.pop(), "fallback"  # type: ignore[return-value]
    return None, "invalid"


class LLMJudge(JudgeBase):
    """Both orders come from the runner; this judge renders one prompt per input and reads one verdict."""

    batch_size = 256

    def __init__(self, model: ChatModel, options: dict[str, Any] | None = None) -> None:
        super().__init__()
        options = dict(options or {})
        known = JUDGE_KEYS | model_keys(model)
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"unknown llm judge option(s) {', '.join(unknown)} for the {model.backend} backend; "
                f"known: {', '.join(sorted(known))}"
            )
        self.model = model
        self.verdict_mode = str(options.get("verdict", "text"))
        if self.verdict_mode not in ("text", "logprobs"):
            raise ConfigError(f"verdict must be text or logprobs, got {self.verdict_mode!r}")
        if self.verdict_mode == "logprobs" and not model.supports_logprobs:
            raise ConfigError(f"{model.spec} cannot return logprobs; use verdict=text")
        user_template = options.get("template")
        self.template_paths: dict[str, Path] = {}
        self.templates: dict[str, Any] = {}
        self.parser = str(options.get("parser", "tailorbench"))
        if self.parser not in PARSERS:
            raise ConfigError(f"judge option parser must be one of {', '.join(PARSERS)}, got {self.parser!r}")
        system_file, user_file = str(options.get("system_file") or ""), str(options.get("user_file") or "")
        self.prompt_files: tuple[str, str] | None = None
        if system_file or user_file:
            if not (system_file and user_file) or user_template:
                raise ConfigError("judge options system_file and user_file go together, without template")
            self.prompt_files = (read_prompt_file(system_file, "system_file"), read_prompt_file(user_file, "user_file"))
            self.template_paths = {"system_file": Path(system_file), "user_file": Path(user_file)}
        elif user_template:
            path = Path(str(user_template)).expanduser()
            self.templates["*"] = compile_template(path, "judge template")[0]
            self.template_paths["*"] = path
        else:
            for language, name in DEFAULT_TEMPLATES.items():
                self.templates[language] = compile_template(TEMPLATES_DIR / name, "judge template")[0]
                self.template_paths[language] = TEMPLATES_DIR / name
        reasoning = as_bool("reasoning", options.get("reasoning", False))
        temperature = as_float("temperature", options.get("temperature", 0.0), minimum=0.0)
        max_tokens = as_int("max_tokens", options.get("max_tokens", 4096 if reasoning else 16), minimum=1)
        top_p = as_float("top_p", options["top_p"], minimum=0.0, maximum=1.0) if "top_p" in options else None
        seed = as_int("seed", options["seed"]) if "seed" in options else None
        self.params = GenParams(
            temperature=temperature,
            max_tokens=max_tokens,
            top_p=top_p,
            seed=seed,
            reasoning=reasoning,
            reasoning_effort=options.get("reasoning_effort") or None,
        )
        self.parse_counts = {"strict": 0, "fallback": 0, "invalid": 0, "failed": 0, "abstain": 0}

    def messages(self, item: JudgeInput) -> list[Message]:
        if self.prompt_files is not None:  # the authors' files: the question alone, whatever the setting shows
            return filled_messages(*self.prompt_files, item.question, item.answer_a, item.answer_b)
        template = self.templates.get("*") or self.templates.get(item.language) or self.templates["en"]
        rendered = template.render(
            question=item.question,
            answer_a=item.answer_a,
            answer_b=item.answer_b,
            context=item.context,
            setting=item.setting,
            language=item.language,
        )
        return split_messages(rendered)

    def _call_params(self) -> GenParams:
        if self.verdict_mode == "logprobs":
            return replace(self.params, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=20, reasoning=False)
        return self.params

    def bind_run_dir(self, run_dir: Path) -> None:
        """The run directory where the model records its provider batches (batch mode; models/batch_engine.py)."""
        bind = getattr(self.model, "bind_run_dir", None)
        if bind is not None:
            bind(run_dir)

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        """Fail fast (key, server, model) unless every call of the run is already in the cache."""
        params = self._call_params()
        if all(self.model.is_cached(self.messages(item), params) for item in inputs):
            return
        await self.model.preflight()

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        if self.verdict_mode == "logprobs":
            return list(await asyncio.gather(*(self._by_logprobs(item) for item in inputs)))
        return list(await asyncio.gather(*(self._by_text(item) for item in inputs)))

    async def judge_stream(self, inputs: Sequence[JudgeInput], stop: asyncio.Event
                           ) -> AsyncIterator[tuple[int, Verdict]]:
        """Verdicts as they land (`judges.base.StreamingJudge`). Calls start only while fewer than the model's
        window are running, so after `stop` only the calls really in flight finish. In batch mode the calls in
        flight wait on provider batches (hours): `stop` stops waiting at once, the batches stay recorded in the
        run directory and running on the provider, and a resume re-attaches to them."""
        call = self._by_logprobs if self.verdict_mode == "logprobs" else self._by_text
        landed: asyncio.Queue[tuple[int, asyncio.Future[Verdict]]] = asyncio.Queue()
        live: set[asyncio.Future[Verdict]] = set()
        following = 0
        batched = getattr(self.model, "batcher", None) is not None
        try:
            while True:
                window = dispatch_window(self.model)
                while following < len(inputs) and not stop.is_set() and (window is None or len(live) < window):
                    started: asyncio.Future[Verdict] = asyncio.ensure_future(call(inputs[following]))
                    live.add(started)
                    started.add_done_callback(functools.partial(_landed, landed, following))
                    following += 1
                if batched and stop.is_set():
                    waiting = sum(1 for f in live if not f.done())
                    for position, verdict in _abandon(live, landed):
                        yield position, verdict
                    live.clear()
                    log.warning("batch mode: not waiting for the %d calls in provider batches; the batches are "
                                "recorded in the run directory (batches/) and keep running on the provider: "
                                "--resume re-attaches to them and sends nothing twice", waiting)
                    return
                if not live:
                    return
                got = await (_first_landed(landed, stop) if batched else landed.get())
                if got is None:
                    continue  # stopped while waiting: the top of the loop lets go of the batches
                position, fut = got
                live.discard(fut)
                if fut.exception() is None:
                    yield position, fut.result()
                    continue
                for other in live:  # an exception ends the stream: abandon the running calls ...
                    other.cancel()
                live.clear()
                while not landed.empty():  # ... but hand over the verdicts that already landed
                    position, done = landed.get_nowait()
                    if not done.cancelled() and done.exception() is None:
                        yield position, done.result()
                fut.result()  # raises
        finally:
            for fut in live:  # the consumer stopped reading (its own error): abandon the calls still running
                fut.cancel()

    async def _by_text(self, item: JudgeInput) -> Verdict:
        outcome = await self.model.chat(self.messages(item), self.params)
        if isinstance(outcome, CallFailure):
            return self._failed(outcome)
        if self.parser == "result":  # the authors read the reply as written, after its last </think>
            picked = parse_result(outcome.raw)
            choice, how = picked, ("strict" if picked is not None else "invalid")
        else:
            choice, how = parse_verdict(outcome.text)
        self.parse_counts[how] += 1
        if choice is None:
            return self._verdict(outcome, status="invalid", error="no verdict found in the answer")
        return self._verdict(outcome, choice=choice)

    async def _by_logprobs(self, item: JudgeInput) -> Verdict:
        outcome = await self.model.choice_logprobs(self.messages(item), LABELS, self._call_params())
        if isinstance(outcome, CallFailure):
            return self._failed(outcome)
        scores, result = outcome
        if not scores:
            self.parse_counts["invalid"] += 1
            return self._verdict(result, status="invalid", error="neither label among the top next tokens")
        a, b = scores.get("A"), scores.get("B")
        if a is not None and b is not None and a == b:
            self.parse_counts["abstain"] += 1
            return self._verdict(result, status="abstain", scores=scores)
        choice: Choice = "A" if b is None or (a is not None and a > b) else "B"
        self.parse_counts["strict"] += 1
        return self._verdict(result, choice=choice, scores=scores)

    def _failed(self, failure: CallFailure) -> Verdict:
        self.parse_counts["failed"] += 1
        return Verdict(status="failed", error=f"{failure.kind}: {failure.error}", latency_s=failure.latency_s)

    @staticmethod
    def _verdict(
        result: ChatResult,
        choice: Choice | None = None,
        status: VerdictStatus = "ok",
        error: str | None = None,
        scores: dict[str, float] | None = None,
    ) -> Verdict:
        return Verdict(
            choice=choice,
            status=status,
            scores=scores,
            raw=result.raw,
            error=error,
            latency_s=result.latency_s,
            usage=Usage(
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                cost_usd=result.cost_usd,
            ),
            truncated=result.finish_reason == "length" and status != "ok",
            cached=result.cached,
        )

    async def aclose(self) -> None:
        await self.model.aclose()

    def describe(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "model": self.model.describe(),
            "templates": {k: str(v) for k, v in self.template_paths.items()},
            "verdict": self.verdict_mode,
            "parser": self.parser,
            **({"probability": "softmax"} if self.verdict_mode == "logprobs" else {}),
            "params": self.params.key_dict(),
            "parse": dict(self.parse_counts),
        }


def _landed(queue: asyncio.Queue[tuple[int, asyncio.Future[Verdict]]], position: int,
            fut: asyncio.Future[Verdict]) -> None:
    queue.put_nowait((position, fut))


async def _first_landed(queue: asyncio.Queue[tuple[int, asyncio.Future[Verdict]]], stop: asyncio.Event
                        ) -> tuple[int, asyncio.Future[Verdict]] | None:
    """The next call to land, or None once `stop` is set first (batch mode does not wait for its batches)."""
    getter = asyncio.ensure_future(queue.get())
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if getter.done():
        return getter.result()
    getter.cancel()  # (a cancelled get leaves the queue as it was)
    return None


def _abandon(live: set[asyncio.Future[Verdict]], queue: asyncio.Queue[tuple[int, asyncio.Future[Verdict]]]
             ) -> list[tuple[int, Verdict]]:
    """Cancel the calls still running; the verdicts that already landed, to hand over before stopping."""
    for fut in live:
        fut.cancel()
    out: list[tuple[int, Verdict]] = []
    while not queue.empty():
        position, done = queue.get_nowait()
        if not done.cancelled() and done.exception() is None:
            out.append((position, done.result()))
    return out


def dispatch_window(model: ChatModel) -> int | None:
    """How many calls may run at once, so that nothing waits in a queue a stop would have to drain: a remote
    model's current concurrency limit (what its limiter lets through; it grows and shrinks as the run goes), a
    local model's batch size (its batch in progress), else None (no limit)."""
    limit = getattr(getattr(model, "limiter", None), "limit", None)
    if isinstance(limit, int | float):
        return max(1, int(limit))
    size = getattr(model, "batch_size", None)
    return max(1, size) if isinstance(size, int) else None


@register_judge("llm")
def _llm(arg: str | None, options: JudgeOptions) -> LLMJudge:
    if not arg:
        raise ConfigError("llm judge needs a model: llm:openai:MODEL, llm:openai:MODEL@URL or llm:hf:PATH")
    extra = dict(options.extra)
    batch_size = as_int("batch_size", extra["batch_size"], minimum=1) if "batch_size" in extra else None
    backend = parse_model_spec(arg).backend
    allowed = backend_options(backend) - _NOT_OPTIONS  # the rest is the judge's (LLMJudge checks them all)
    model_options = {k: v for k, v in extra.items() if k in allowed}
    if "seed" not in model_options:
        model_options["seed"] = options.seed  # seeds the retry jitter, not the generation
    model = make_chat_model(arg, model_options)
    judge = LLMJudge(model, extra)
    if batch_size is not None:
        judge.batch_size = batch_size
    return judge
