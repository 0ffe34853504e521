"""`hf:PATH_OR_HUB_ID`: a local transformers causal LM behind the ChatModel protocol.

Why a micro-batcher: judges call `chat` / `choice_logprobs` once per input, concurrently; a local model is
fastest on batches, so calls that arrive together are grouped (per kind and parameters) into left-padded
batches and run in a worker thread, keeping the event loop free. `choice_logprobs` is one forward pass: the
exact next-token log-probabilities of the option labels after the chat template's generation prompt, the
cheap way to read a pairwise verdict from a local model. torch and transformers are imported on first use.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.models.backends import BACKENDS
from tailorbench.models.base import (
    CallFailure,
    ChatResult,
    GenParams,
    Message,
    TokenLogprob,
    strip_think,
)
from tailorbench.models.model import CallError
from tailorbench.options import as_int


@dataclass
class _Pending:
    kind: str  # chat | choice
    messages: list[Message]
    params: GenParams
    choices: tuple[str, ...] = ()
    future: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@BACKENDS.register("hf")
class HFChatAPI:
    """A transformers causal LM with a chat template; generation and label scoring in batches (a `ModelAPI`:
    the wrapper in models/model.py caches and counts)."""

    backend = "hf"
    supports_logprobs = True
    remote = False
    public_base_url = None

    def __init__(
        self,
        model: str,
        *,
        spec: str = "",
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int | str = 8,
        max_length: int | str | None = None,
        seed: int | str = 0,
    ) -> None:
        self.model = model
        self.spec = spec or f"hf:{model}"
        self.device = device
        self.dtype = dtype
        self.batch_size = as_int("batch_size", batch_size, minimum=1)
        self.max_length = as_int("max_length", max_length, minimum=1) if max_length else None
        self.seed = as_int("seed", seed)
        #: what changes the answers, part of every call key (models/model.py): a bfloat16 run never reads a
        #: float32 run's answers
        self.cache_identity = f"dtype={dtype}"
        self._lm: Any = None
        self._tok: Any = None
        self._torch: Any = None
        self._pending: list[_Pending] = []
        self._worker: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    # -- loading --------------------------------------------------------------------------------------------

    def _tokenizer(self) -> Any:
        """The tokenizer alone (cheap; what `prompt_tokens` needs before the model is loaded)."""
        if self._tok is not None:
            return self._tok
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise ConfigError("hf: models need the [local] extra: pip install 'tailorbench[local]'") from exc
        try:
            tok = AutoTokenizer.from_pretrained(self.model)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.spec}: cannot load the model: {exc}") from None
        if tok.chat_template is None:
            raise ConfigError(f"{self.spec}: the tokenizer has no chat template")
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        self._tok = tok
        return tok

    def _load(self) -> None:
        if self._lm is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM
        except ImportError as exc:
            raise ConfigError("hf: models need the [local] extra: pip install 'tailorbench[local]'") from exc
        tok = self._tokenizer()
        try:
            lm = AutoModelForCausalLM.from_pretrained(self.model, dtype=getattr(torch, self.dtype))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.spec}: cannot load the model: {exc}") from None
        model: Any = lm
        self._torch, self._tok, self._lm = torch, tok, model.to(self.device).eval()

    def _prompt(self, messages: Sequence[Message]) -> str:
        text: str = self._tokenizer().apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return text

    def prompt_tokens(self, prompts: Sequence[Sequence[Message]]) -> list[int]:
        """Tokens of each prompt as the model will get it (chat template and generation prompt), without
        loading the model: a run checks them against `max_length` before any call (judges.base.check_inputs)."""
        tok = self._tokenizer()
        texts = [self._prompt(m) for m in prompts]
        out: list[int] = []
        for start in range(0, len(texts), 1024):
            out.extend(len(ids) for ids in tok(texts[start : start + 1024], add_special_tokens=False)["input_ids"])
        return out

    async def preflight(self) -> None:
        await asyncio.to_thread(self._load)

    # -- protocol -------------------------------------------------------------------------------------------

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        return await self._submit(_Pending("chat", list(messages), params))

    async def choose(self, messages: Sequence[Message], choices: Sequence[str], params: GenParams) -> ChatResult:
        """The exact next-token log-probabilities of `choices` (in `logprobs[0].top`), one forward pass."""
        return await self._submit(_Pending("choice", list(messages), params, tuple(choices)))

    async def _submit(self, item: _Pending) -> ChatResult:
        self._pending.append(item)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._drain())
        outcome: ChatResult | CallFailure = await item.future
        if isinstance(outcome, CallFailure):
            raise CallError(outcome.kind, outcome.error, retryable=False)
        return outcome

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let every caller of this event-loop turn enqueue first
        while self._pending:
            groups: dict[tuple[str, GenParams, tuple[str, ...]], list[_Pending]] = {}
            for item in self._pending:
                groups.setdefault((item.kind, item.params, item.choices), []).append(item)
            self._pending = []
            for (kind, params, choices), items in groups.items():
                for start in range(0, len(items), self.batch_size):
                    batch = items[start : start + self.batch_size]
                    began = time.perf_counter()
                    try:
                        async with self._lock:
                            results = await asyncio.to_thread(self._run_batch, kind, batch, params, choices)
                    except Exception as exc:  # a failed batch fails its calls, counted; the run goes on
                        failure = CallFailure(f"{type(exc).__name__}: {exc}", "local", 1, time.perf_counter() - began)
                        for item in batch:
                            if not item.future.done():
                                item.future.set_result(failure)
                        continue
                    elapsed = (time.perf_counter() - began) / len(batch)
                    for item, result in zip(batch, results):
                        result.latency_s = elapsed
                        if not item.future.done():
                            item.future.set_result(result)

    # -- compute (worker thread) ----------------------------------------------------------------------------

    def _run_batch(self, kind: str, batch: Sequence[_Pending], params: GenParams,
                   choices: Sequence[str]) -> list[ChatResult | CallFailure]:
        """One batch; a prompt longer than `max_length` fails alone (the others of its batch still run)."""
        self._load()
        results: list[ChatResult | CallFailure | None] = [None] * len(batch)
        fits = list(range(len(batch)))
        if self.max_length:
            for i, n in enumerate(self.prompt_tokens([b.messages for b in batch])):
                if n > self.max_length:
                    results[i] = CallFailure(f"prompt of {n} tokens exceeds max_length {self.max_length}", "client")
            fits = [i for i in fits if results[i] is None]
        if fits:
            ok = [batch[i] for i in fits]
            ran = self._score(ok, choices) if kind == "choice" else self._generate(ok, params)
            for i, result in zip(fits, ran):
                results[i] = result
        return [r for r in results if r is not None]

    def _encode(self, batch: Sequence[_Pending]) -> Any:
        self._load()
        texts = [self._prompt(b.messages) for b in batch]
        enc = self._tok(texts, padding=True, add_special_tokens=False, return_tensors="pt")
        if self.max_length and enc["input_ids"].shape[1] > self.max_length:
            raise ValueError(f"prompt of {enc['input_ids'].shape[1]} tokens exceeds max_length {self.max_length}")
        return enc.to(self.device)

    def label_ids(self, label: str) -> list[int]:
        """First-token ids that spell `label` (`A` and ` A` where each is a single token)."""
        ids = []
        for variant in (label, " " + label):
            tokens = self._tok.encode(variant, add_special_tokens=False)
            if tokens and (len(tokens) == 1 or variant == label):
                ids.append(tokens[0])
        return list(dict.fromkeys(ids))

    def _score(self, batch: Sequence[_Pending], choices: Sequence[str]) -> list[ChatResult]:
        self._load()
        torch = self._torch
        enc = self._encode(batch)
        mask = enc["attention_mask"]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self._lm(input_ids=enc["input_ids"], attention_mask=mask, position_ids=positions).logits[:, -1]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        ids = {c: self.label_ids(c) for c in choices}
        out = []
        for row, n_prompt in zip(logprobs, mask.sum(-1).tolist()):
            scores = {c: max(float(row[i]) for i in ids[c]) for c in choices if ids[c]}
            best = int(row.argmax())
            token = self._tok.decode([best])
            out.append(
                ChatResult(
                    text=token,
                    raw=token,
                    finish_reason="length",
                    prompt_tokens=int(n_prompt),
                    completion_tokens=0,
                    logprobs=[TokenLogprob(token, float(row[best]), scores)],
                )
            )
        return out

    def _generate(self, batch: Sequence[_Pending], params: GenParams) -> list[ChatResult]:
        self._load()
        torch = self._torch
        enc = self._encode(batch)
        sample = bool(params.temperature) and (params.temperature or 0) > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_tokens or 256,
            "do_sample": sample,
            "pad_token_id": self._tok.pad_token_id,
            "return_dict_in_generate": True,
            "output_scores": params.logprobs,
        }
        if sample:
            kwargs["temperature"] = params.temperature
            if params.top_p is not None:
                kwargs["top_p"] = params.top_p
            torch.manual_seed(self.seed if params.seed is None else params.seed)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            out = self._lm.generate(**enc, **kwargs)
        width = enc["input_ids"].shape[1]
        eos = self._tok.eos_token_id
        results = []
        for i, n_prompt in enumerate(enc["attention_mask"].sum(-1).tolist()):
            new = out.sequences[i, width:].tolist()
            finish = "length"
            if eos in new:
                new = new[: new.index(eos)]
                finish = "stop"
            new = [t for t in new if t != self._tok.pad_token_id] if eos != self._tok.pad_token_id else new
            content = self._tok.decode(new, skip_special_tokens=True)
            for stop in params.stop or ():
                if stop in content:
                    content, finish = content[: content.index(stop)], "stop"
            logprobs = None
            if params.logprobs and out.scores:
                logprobs = []
                for step, token_id in enumerate(new):
                    row = torch.log_softmax(out.scores[step][i].float(), dim=-1)
                    top = {}
                    if params.top_logprobs:
                        values, indices = row.topk(params.top_logprobs)
                        top = {
                            self._tok.decode([int(j)]): float(v) for v, j in zip(values, indices) if math.isfinite(v)
                        }
                    logprobs.append(TokenLogprob(self._tok.decode([token_id]), float(row[token_id]), top))
            text, reasoning = strip_think(content)
            results.append(
                ChatResult(
                    text=text,
                    raw=content,
                    finish_reason=finish,
                    prompt_tokens=int(n_prompt),
                    completion_tokens=len(new),
                    logprobs=logprobs,
                    reasoning=reasoning,
                )
            )
        return results

    async def aclose(self) -> None:
        if self._worker is not None and not self._worker.done():
            await self._worker
        self._lm = None

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "device": self.device,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
        }
