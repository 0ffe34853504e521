"""`vllm:MODEL_OR_PATH`: an offline `vllm.LLM` engine behind the ChatModel protocol (a `ModelAPI`: the one
wrapper in models/model.py caches, counts and resumes, as for every backend).

Why chunks: vLLM is fastest when it schedules many requests at once, and a run must lose little when it dies.
Calls that arrive together go to the engine as one `LLM.generate` of up to `chunk_size` requests, one chunk at
a time; each call's answer lands when its chunk completes, the wrapper caches it and the judge loop appends its
verdict, so a crash loses at most the chunk in the engine and `--resume` redoes only that. The LLM judge keeps
two chunks dispatched (`batch_size` below is what its dispatch window reads): while the engine runs one, the
next is tokenized, so the engine does not wait for the tokenizer (about 4 ms per 1,400-token prompt here).

Prompts are rendered and tokenized here with the model's own tokenizer (chat template, generation prompt, no
extra special tokens), exactly as the `hf:` backend does, and handed to the engine as token ids, so both
backends see the same tokens. Label scoring (`choose`, the judge's `verdict=logprobs`) generates one token and
reads the exact raw log-probabilities of the label tokens there (`SamplingParams.logprob_token_ids`): both
labels are always scored, in the top alternatives or not, in the same single pass. vLLM is imported only when
the engine starts (models/vllm_engine.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.models.backends import BACKENDS
from tailorbench.models.base import CallFailure, ChatResult, GenParams, Message, TokenLogprob, strip_think
from tailorbench.models.model import CallError
from tailorbench.models.vllm_engine import (
    SharedEngine,
    VLLMEngineConfig,
    acquire_engine,
    release_engine,
    require_vllm,
)
from tailorbench.models.vllm_ray_data import DEFAULT_CHUNK as RAY_DATA_CHUNK
from tailorbench.models.vllm_ray_data import RayDataEngine, RayDataSettings, RowOutput
from tailorbench.options import as_int

#: requests handed to the engine at once (and the most a crash can lose)
DEFAULT_CHUNK = 256


@dataclass
class _Call:
    kind: str  # chat | choice
    messages: list[Message]
    params: GenParams
    choices: tuple[str, ...] = ()
    future: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@BACKENDS.register("vllm")
class VLLMChatAPI:
    """Generation and label scoring on one offline vLLM engine, in chunks."""

    backend = "vllm"
    supports_logprobs = True
    remote = False
    public_base_url = None
    #: its fields are this backend's engine options (models/backends.py reads them)
    config_type = VLLMEngineConfig

    def __init__(self, model: str, *, spec: str = "", chunk_size: int | str | None = None,
                 ray_data: RayDataSettings | None = None, **engine: Any) -> None:
        self.model = model
        self.spec = spec or f"vllm:{model}"
        if ray_data is not None and not isinstance(ray_data, RayDataSettings):
            raise ConfigError(f"{self.spec}: ray_data is not an option: `--executor ray` runs a vllm: model's "
                              "engines on the cluster (docs/scale.md)")
        default_chunk = DEFAULT_CHUNK if ray_data is None else RAY_DATA_CHUNK
        self.chunk_size = as_int("chunk_size", default_chunk if chunk_size in (None, "") else chunk_size, minimum=1)
        self.config = VLLMEngineConfig.from_options(engine, owner=self.spec)
        self._engine: SharedEngine | None = None
        #: the engines on a Ray cluster (Ray Data LLM) instead of one in this process
        self._ray_data = None if ray_data is None else RayDataEngine(model, self.config, ray_data, self.spec)
        self._tok: Any = None
        self._pending: list[_Call] = []
        self._worker: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        #: the engine or tokenizer could not start: every later call fails with this
        self._broken: ConfigError | None = None
        self._arrived = asyncio.Event()
        #: `LLM.generate` calls and the calls they served (and the largest chunk); a cached run makes none
        self.engine_calls = 0
        self.engine_requests = 0
        self.largest_chunk = 0
        self.engine_start_s: float | None = None

    @property
    def batch_size(self) -> int:
        """The judge's dispatch window (judges/llm.dispatch_window): the chunk in the engine and the next one,
        tokenized meanwhile (so the engine never waits for the tokenizer between chunks)."""
        return 2 * self.chunk_size

    @property
    def cache_identity(self) -> str:
        """The engine options that change answers, part of every call key (models/model.py): a run with another
        dtype or quantization never reads this one's answers. The executor is not among them."""
        return self.config.answer_identity()

    @property
    def max_length(self) -> int | None:
        """Prompt tokens a call may have (the configured `max_model_len`; judges.base.check_inputs warns)."""
        return self.config.max_model_len

    # -- loading --------------------------------------------------------------------------------------------

    def _tokenizer(self) -> Any:
        """The model's HF tokenizer (cheap; prompts are rendered and counted without the engine)."""
        if self._tok is not None:
            return self._tok
        if self._ray_data is None:
            require_vllm(self.spec)  # the extra first: a missing vLLM is not a tokenizer problem
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise ConfigError(f"{self.spec}: vLLM is not installed (pip install 'tailorbench[vllm]')") from exc
        try:
            tok = AutoTokenizer.from_pretrained(self.config.tokenizer or self.model, revision=self.config.revision,
                                                trust_remote_code=self.config.trust_remote_code)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.spec}: cannot load the tokenizer: {exc}") from None
        if tok.chat_template is None:
            raise ConfigError(f"{self.spec}: the tokenizer has no chat template")
        self._tok = tok
        return tok

    def _load(self) -> SharedEngine:
        assert self._ray_data is None, "the engines of this backend run on the Ray cluster"
        if self._engine is None:
            self._tokenizer()
            self._engine = acquire_engine(self.model, self.config, self.spec)
            self.engine_start_s = self._engine.start_s
        return self._engine

    def _ids(self, messages: Sequence[Message]) -> list[int]:
        tok = self._tokenizer()
        text = tok.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        ids: list[int] = tok(text, add_special_tokens=False)["input_ids"]
        return ids

    def prompt_tokens(self, prompts: Sequence[Sequence[Message]]) -> list[int]:
        """Tokens of each prompt as the engine gets it, without starting the engine."""
        return [len(self._ids(m)) for m in prompts]

    async def preflight(self) -> None:
        await asyncio.to_thread(self._start)

    def _start(self) -> None:
        if self._ray_data is None:
            self._load()
            return
        self._ray_data.eos_token_id = self._tokenizer().eos_token_id
        self._ray_data.start()

    # -- protocol -------------------------------------------------------------------------------------------

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        return await self._submit(_Call("chat", list(messages), params))

    async def choose(self, messages: Sequence[Message], choices: Sequence[str], params: GenParams) -> ChatResult:
        """Each label's exact log-probability as the first answer token (in `logprobs[0].top`)."""
        return await self._submit(_Call("choice", list(messages), params, tuple(choices)))

    async def _submit(self, call: _Call) -> ChatResult:
        self._pending.append(call)
        self._arrived.set()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._drain())
        outcome: ChatResult | CallFailure = await call.future
        if isinstance(outcome, CallFailure):
            raise CallError(outcome.kind, outcome.error, retryable=False)
        return outcome

    async def _drain(self) -> None:
        """Chunks to the engine one at a time; the next chunk is tokenized while the engine runs this one."""
        seen = -1
        while len(self._pending) != seen and len(self._pending) < self.chunk_size:
            seen = len(self._pending)
            await asyncio.sleep(0)  # every caller of these event-loop turns enqueues first
        running: asyncio.Future[None] | None = None
        while True:
            if running is not None and not running.done() and len(self._pending) < self.chunk_size:
                await self._more_or_done(running)  # fill the next chunk while the engine works
                continue
            if not self._pending:
                if running is None:
                    return
                await running  # calls that arrive meanwhile are the next chunk
                running = None
                continue
            chunk, self._pending = self._pending[: self.chunk_size], self._pending[self.chunk_size :]
            try:
                prompts = await asyncio.to_thread(self._prompts, chunk)
            except ConfigError as exc:
                self._fail_all(chunk, exc)
                continue
            if running is not None:
                await running
            running = asyncio.ensure_future(self._execute(chunk, prompts))

    async def _more_or_done(self, running: asyncio.Future[None]) -> None:
        """Until another call arrives or the running chunk ends."""
        self._arrived.clear()
        waiter: asyncio.Future[Any] = asyncio.ensure_future(self._arrived.wait())
        pair: set[asyncio.Future[Any]] = {waiter, running}
        try:
            await asyncio.wait(pair, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()

    def _fail_all(self, chunk: Sequence[_Call], exc: ConfigError) -> None:
        """The engine or the tokenizer cannot start: every waiting call raises it, the run stops."""
        self._broken = exc
        for call in [*chunk, *self._pending]:
            if not call.future.done():
                call.future.set_exception(exc)
        self._pending = []

    async def _execute(self, chunk: Sequence[_Call], prompts: list[list[int]]) -> None:
        began = time.perf_counter()
        if self._broken is not None:
            self._fail_all(chunk, self._broken)
            return
        loop = asyncio.get_running_loop()
        landed = 0

        def answer(call: _Call, result: ChatResult | CallFailure) -> None:
            nonlocal landed
            landed += 1
            if isinstance(result, ChatResult):
                result.latency_s = (time.perf_counter() - began) / landed
            if not call.future.done():
                call.future.set_result(result)

        def deliver(position: int, result: ChatResult | CallFailure) -> None:  # from the worker thread
            loop.call_soon_threadsafe(answer, chunk[position], result)

        try:
            async with self._lock:
                results = await asyncio.to_thread(self._run_chunk, chunk, prompts, deliver)
        except ConfigError as exc:
            self._fail_all(chunk, exc)
            return
        except Exception as exc:  # a failed chunk fails its calls, counted; the run goes on
            failure = CallFailure(f"{type(exc).__name__}: {exc}", "local", 1, time.perf_counter() - began)
            results = [failure] * len(chunk)
        if results is None:  # answered row by row as they landed
            return
        elapsed = (time.perf_counter() - began) / len(chunk)
        for call, result in zip(chunk, results):
            if isinstance(result, ChatResult):
                result.latency_s = elapsed
            if not call.future.done():
                call.future.set_result(result)

    # -- compute (worker threads) ---------------------------------------------------------------------------

    def _prompts(self, chunk: Sequence[_Call]) -> list[list[int]]:
        return [self._ids(c.messages) for c in chunk]

    def _run_chunk(self, chunk: Sequence[_Call], prompts: list[list[int]],
                   deliver: Callable[[int, ChatResult | CallFailure], None]) -> list[ChatResult | CallFailure] | None:
        """One `LLM.generate` for the chunk (each call its own sampling parameters), its results returned; or,
        on the Ray cluster, one dataset whose rows are delivered as they land (None returned). A prompt too long
        for the engine fails alone."""
        if self._ray_data is not None:
            self._run_ray_data(self._ray_data, chunk, prompts, deliver)
            return None
        engine = self._load()
        with engine.lock:
            return self._run_locked(engine.llm, chunk, prompts)

    def _admit(self, prompts: list[list[int]], limit: int | None) -> tuple[list[ChatResult | CallFailure | None],
                                                                         list[int]]:
        """The prompts that fit `limit` (prompt and one answer token), and a failure for each that does not."""
        out: list[ChatResult | CallFailure | None] = [None] * len(prompts)
        runs: list[int] = []
        for i, ids in enumerate(prompts):
            if limit is not None and len(ids) + 1 > limit:
                out[i] = CallFailure(f"prompt of {len(ids)} tokens leaves no room in max_model_len {limit}", "client")
            else:
                runs.append(i)
        return out, runs

    def _run_ray_data(self, engine: RayDataEngine, chunk: Sequence[_Call], prompts: list[list[int]],
                      deliver: Callable[[int, ChatResult | CallFailure], None]) -> None:
        self._start()
        out, runs = self._admit(prompts, self.config.max_model_len)
        for i, refused in enumerate(out):
            if refused is not None:
                deliver(i, refused)
        if not runs:
            return
        self.engine_calls += 1
        self.engine_requests += len(runs)
        self.largest_chunk = max(self.largest_chunk, len(runs))

        def landed(position: int, output: RowOutput | str) -> None:
            i = runs[position]
            if isinstance(output, str):
                deliver(i, CallFailure(f"the engine failed the request: {output}", "local"))
            elif chunk[i].kind == "choice":
                deliver(i, self._choice_results([(chunk[i], prompts[i], output)])[0])
            else:
                deliver(i, self._chat_result(chunk[i].params, prompts[i], output))

        engine.generate([prompts[i] for i in runs], [self._sampling_kwargs(chunk[i], uniform=True) for i in runs],
                        landed)

    def _run_locked(self, llm: Any, chunk: Sequence[_Call], prompts: list[list[int]]) -> list[ChatResult | CallFailure]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        limit = self.config.max_model_len or int(llm.llm_engine.model_config.max_model_len)
        out, runs = self._admit(prompts, limit)
        if runs:
            sampling = [self._sampling_params(SamplingParams, chunk[i]) for i in runs]
            answers = self._generate(llm, [TokensPrompt(prompt_token_ids=prompts[i]) for i in runs], sampling)
            answer_of = dict(zip(runs, answers))
            choice_rows = [i for i in runs if chunk[i].kind == "choice"]
            for i in runs:
                if chunk[i].kind != "choice":
                    out[i] = self._chat_result(chunk[i].params, prompts[i], answer_of[i])
            chosen = self._choice_results([(chunk[i], prompts[i], answer_of[i]) for i in choice_rows])
            for i, result in zip(choice_rows, chosen):
                out[i] = result
        return [r for r in out if r is not None]

    def _generate(self, llm: Any, prompts: list[Any], sampling: list[Any]) -> list[Any]:
        self.engine_calls += 1
        self.engine_requests += len(prompts)
        self.largest_chunk = max(self.largest_chunk, len(prompts))
        return list(llm.generate(prompts, sampling, use_tqdm=False))

    def _sampling_params(self, sampling_params: Any, call: _Call) -> Any:
        kwargs = self._sampling_kwargs(call)
        structured = kwargs.pop("structured_outputs", None)
        if structured is not None:
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(**structured)
        return sampling_params(**kwargs)

    def _sampling_kwargs(self, call: _Call, uniform: bool = False) -> dict[str, Any]:
        """`vllm.SamplingParams` keyword arguments of a call; `uniform`: every key present (None: vLLM's
        default), as the rows of one Ray Dataset must be."""
        params = call.params
        kwargs: dict[str, Any] = dict.fromkeys(("top_p", "seed", "stop", "logprobs", "logprob_token_ids")) \
            if uniform else {}
        if call.kind == "choice":
            ids = sorted({i for c in call.choices for i in self.label_ids(c)})
            kwargs.update({"max_tokens": 1, "temperature": 0.0, "logprob_token_ids": ids})
        else:
            kwargs.update({"max_tokens": params.max_tokens or 256, "temperature": params.temperature or 0.0})
            if params.temperature:
                if params.top_p is not None:
                    kwargs["top_p"] = params.top_p
                kwargs["seed"] = self.config.seed if params.seed is None else params.seed
            if params.stop:
                kwargs["stop"] = list(params.stop)
            if params.logprobs:
                kwargs["logprobs"] = min(params.top_logprobs or 0, self.config.max_logprobs)
            for key, value in params.extra:
                if key != "response_format":
                    raise ConfigError(f"{self.spec}: the request option {key} does not apply to the vllm backend "
                                      "(it takes response_format)")
                kwargs["structured_outputs"] = self._structured(value)
        if uniform:  # vLLM's defaults where a row has none (top_p takes no None)
            kwargs.setdefault("structured_outputs", None)
            if kwargs["top_p"] is None:
                kwargs["top_p"] = 1.0
        return kwargs

    def _structured(self, response_format: Any) -> dict[str, Any]:
        """An OpenAI-style `response_format` as vLLM's `StructuredOutputsParams` fields (guided decoding: the
        answer is valid, compact JSON, of the schema where one is given)."""
        fmt = response_format if isinstance(response_format, dict) else {}
        schema = fmt.get("json_schema", {}).get("schema") if fmt.get("type") == "json_schema" else fmt.get("schema")
        if fmt.get("type") not in ("json_schema", "json_object") or (fmt.get("type") == "json_schema" and not schema):
            raise ConfigError(f"{self.spec}: response_format {response_format!r} is not one the vllm backend "
                              "takes (json_schema with a schema, or json_object)")
        if schema:  # compact JSON is the engine's setting (`compact_json`, models/vllm_engine.py)
            return {"json": json.dumps(schema), "json_object": None}
        return {"json": None, "json_object": True}

    def _decode(self, token_id: int, logprob: Any = None) -> str:
        decoded = getattr(logprob, "decoded_token", None)
        return decoded if isinstance(decoded, str) else str(self._tokenizer().decode([token_id]))

    def _chat_result(self, params: GenParams, prompt: list[int], answer: Any) -> ChatResult:
        completion = answer.outputs[0]
        content = completion.text
        text, reasoning = strip_think(content)
        logprobs = None
        tokens = list(completion.token_ids)
        if completion.finish_reason == "stop" and completion.stop_reason is None and tokens \
                and tokens[-1] == self._tokenizer().eos_token_id:
            tokens = tokens[:-1]  # the end-of-sequence token is no part of the answer (as on `hf:`)
        if params.logprobs and completion.logprobs is not None:
            logprobs = []
            for token_id, row in zip(tokens, completion.logprobs):
                top = {}
                if params.top_logprobs:
                    ranked = sorted(row.items(), key=lambda kv: kv[1].logprob, reverse=True)
                    top = {self._decode(t, lp): float(lp.logprob) for t, lp in ranked[: params.top_logprobs]}
                chosen = row[token_id]
                logprobs.append(TokenLogprob(self._decode(token_id, chosen), float(chosen.logprob), top))
        finish = completion.finish_reason if completion.finish_reason in ("stop", "length") else "stop"
        return ChatResult(text=text, raw=content, finish_reason=finish, prompt_tokens=len(prompt),
                          completion_tokens=len(completion.token_ids), logprobs=logprobs, reasoning=reasoning)

    def label_ids(self, label: str) -> list[int]:
        """First-token ids that spell `label` (`A` and ` A` where each is a single token), as `hf:` does."""
        tok = self._tokenizer()
        ids = []
        for variant in (label, " " + label):
            tokens = tok.encode(variant, add_special_tokens=False)
            if tokens and (len(tokens) == 1 or variant == label):
                ids.append(tokens[0])
        return list(dict.fromkeys(ids))

    def _choice_results(self, rows: list[tuple[_Call, list[int], Any]]) -> list[ChatResult]:
        """Label scores: the exact raw log-probabilities of the label tokens (`logprob_token_ids`) at the one
        generated position; the greedy token is the text."""
        results = []
        for call, prompt, answer in rows:
            completion = answer.outputs[0]
            row = {int(t): float(lp.logprob) for t, lp in (completion.logprobs or [{}])[0].items()}
            scores = {c: max(row[i] for i in ids) for c in call.choices
                      if (ids := [i for i in self.label_ids(c) if i in row])}
            best = int(completion.token_ids[0])
            token = self._decode(best, (completion.logprobs or [{}])[0].get(best))
            results.append(ChatResult(text=token, raw=token, finish_reason="length", prompt_tokens=len(prompt),
                                      completion_tokens=0,
                                      logprobs=[TokenLogprob(token, row.get(best, 0.0), scores)]))
        return results

    async def aclose(self) -> None:
        if self._worker is not None and not self._worker.done():
            await self._worker
        engine, self._engine = self._engine, None
        if engine is not None:
            release_engine(engine)
        if self._ray_data is not None:
            self._ray_data.close()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "chunk_size": self.chunk_size,
            "engine": self.config.engine_kwargs(),
            "engine_calls": self.engine_calls,
            "engine_requests": self.engine_requests,
            "largest_chunk": self.largest_chunk,
            "engine_start_s": self.engine_start_s,
            **({"engine_on": self._ray_data.describe()} if self._ray_data is not None else {}),
        }
