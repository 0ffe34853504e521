"""`rm:vllm:PATH`: reward-model scoring on vLLM's pooling runner, for plain sequence classifiers with one output.

Why only plain ones: vLLM computes the classifier's logit and nothing else. A `tailor train-rm` checkpoint of
the feature-head recipe adds terms vLLM cannot compute (answer length, persona overlap, embedding cosines, the
answer n-gram head: models/reward_hf.py, ngram_head.py), so such a checkpoint is refused with a message naming
the HF path (`rm:PATH`, the default), never scored without its terms.

The input is exactly the HF scorer's: the same `RewardEncoder` (chat template or segment pair, the per-segment
truncation policy, truncation flags), handed to the engine as token ids; the score is the raw logit (vLLM's
classify activation is switched off), so `rm:vllm:` and `rm:` agree to float tolerance on the same checkpoint.
vLLM is imported only when the engine starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.models.reward_encoding import RewardEncoder
from tailorbench.models.reward_format import RewardFormat, Triple, read_format
from tailorbench.models.reward_hf import ensure_pad_token
from tailorbench.models.vllm_engine import SharedEngine, VLLMEngineConfig, acquire_engine, release_engine


def vllm_computable(path: str, fmt: RewardFormat | None) -> str | None:
    """Why vLLM cannot score this checkpoint (None when it can): a format with terms beside the logit."""
    if fmt is None:
        return None
    extra = list(fmt.features)
    if fmt.length_weight is not None:
        extra.append("length")
    if not fmt.encoder_score:
        extra.append("no encoder score")
    if not extra:
        return None
    return (f"rm:vllm:{path}: this checkpoint's score adds terms vLLM's pooling runner cannot compute "
            f"({', '.join(dict.fromkeys(extra))}: the feature-head recipe); score it with the HF path, rm:{path}")


class VLLMRewardModel:
    """`score(triples)` -> (scores, truncated flags) on a vLLM pooling engine; the interface of HFRewardModel
    that the `rm` judge uses."""

    def __init__(self, path: str, *, max_length: int | None = None, batch_size: int = 1024,
                 config: VLLMEngineConfig | None = None) -> None:
        self.path = path
        self.batch_size = batch_size
        self.config = config or VLLMEngineConfig()
        fmt = read_format(path)
        refusal = vllm_computable(path, fmt)
        if refusal:
            raise ConfigError(refusal)
        self.fmt = fmt or RewardFormat()
        if max_length is not None:
            self.fmt.max_length = max_length
        try:
            from transformers import AutoConfig, AutoTokenizer

            model_config = AutoConfig.from_pretrained(path, trust_remote_code=self.config.trust_remote_code)
            self.tokenizer = AutoTokenizer.from_pretrained(self.config.tokenizer or path,
                                                           trust_remote_code=self.config.trust_remote_code)
        except ImportError as exc:
            raise ConfigError("rm:vllm: needs vLLM (pip install 'tailorbench[vllm]')") from exc
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load reward model {path!r}: {exc}") from None
        labels = int(getattr(model_config, "num_labels", 1))
        architectures = list(getattr(model_config, "architectures", None) or [])
        if not any(a.endswith("ForSequenceClassification") for a in architectures):
            raise ConfigError(f"rm:vllm:{path}: not a sequence classifier (architectures: "
                              f"{', '.join(architectures) or 'none'}); vLLM scores only trained classifier heads, "
                              f"the HF path rm:{path} adds a seeded head to a base model")
        if labels != 1:
            raise ConfigError(f"reward model {path!r} has {labels} outputs; expected 1")
        limit = getattr(model_config, "max_position_embeddings", None)
        if limit and self.fmt.max_length > limit:
            self.fmt.max_length = int(limit)
        self.notes = [n for n in [ensure_pad_token(self.tokenizer)] if n]
        self.precision = self.config.dtype
        self.encoder = RewardEncoder(self.tokenizer, self.fmt)
        self._engine: SharedEngine | None = None
        self.engine_calls = 0

    def _start(self) -> SharedEngine:
        if self._engine is None:
            max_len = self.config.max_model_len or self.fmt.max_length
            config = VLLMEngineConfig(**{**asdict(self.config), "max_model_len": max_len})
            self._engine = acquire_engine(self.path, config, f"rm:vllm:{self.path}", runner="pooling")
        return self._engine

    def close(self) -> None:
        """Hand the engine back (the last user shuts it down)."""
        engine, self._engine = self._engine, None
        if engine is not None:
            release_engine(engine)

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.path,
            "runner": "vllm pooling",
            "engine": self.config.engine_kwargs(),
            "format": "chat_template" if self.encoder.chat else "segment_pair",
            **asdict(self.fmt),
            "truncated": dict(self.encoder.truncated),
            "notes": self.notes,
            "engine_calls": self.engine_calls,
        }

    def check_truncation(self, triples: Sequence[Triple]) -> np.ndarray:
        return self.encoder.check(triples)

    def score_encoded(self, encoded: Sequence[dict[str, Any]]) -> np.ndarray:
        """Raw logits of pre-encoded inputs, in input order (chunks of `batch_size` requests)."""
        from vllm import PoolingParams
        from vllm.inputs import TokensPrompt

        engine = self._start()
        llm = engine.llm
        out = np.zeros(len(encoded), dtype=np.float64)
        params = PoolingParams(use_activation=False)
        for start in range(0, len(encoded), self.batch_size):
            chunk = encoded[start : start + self.batch_size]
            self.engine_calls += 1
            with engine.lock:
                results = llm.classify([_prompt(TokensPrompt, e) for e in chunk], pooling_params=params,
                                       use_tqdm=False)
            for k, result in enumerate(results):
                out[start + k] = float(np.asarray(result.outputs.probs, dtype=np.float64).reshape(-1)[0])
        return out

    def score(self, triples: Sequence[Triple], dedup: bool = True) -> tuple[np.ndarray, np.ndarray]:
        unique = list(dict.fromkeys(triples)) if dedup else list(triples)
        encoded, flags = self.encoder.encode(unique)
        scores = self.score_encoded(encoded)
        if not dedup:
            return scores, flags
        row = {t: k for k, t in enumerate(unique)}
        index = np.fromiter((row[t] for t in triples), np.int64, len(triples))
        return scores[index], flags[index]


def _prompt(tokens_prompt: Any, encoded: dict[str, Any]) -> Any:
    """The engine's input of one encoded triple; segment-pair formats (BERT-style) keep their token types
    (vLLM passes them to cross-encoder models; untested here: the tests' classifier uses a chat template)."""
    prompt = tokens_prompt(prompt_token_ids=list(encoded["input_ids"]))
    if any(encoded.get("token_type_ids") or ()):  # all zeros is the engine's default
        prompt["token_type_ids"] = list(encoded["token_type_ids"])
    return prompt
