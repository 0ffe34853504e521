"""Local reward-model backend: a Hugging Face sequence classifier with one output scores (context, question,
answer) triples. Shared by the RM judge (scoring) and `tailor train-rm` (training), so both see exactly the
same input text, the same truncation and the same head.

Input format (`reward_format.py`; its encoding and truncation, `reward_encoding.py`): the tokenizer's chat
template when it has one (context + question as the user turn, the answer as the assistant turn); otherwise a
segment pair, (context + question, answer). Truncation policy (per segment, in tokens, see
docs/reward_models.md): the question keeps up to `question_cap` tokens; the answer keeps up to
`max(answer_share * rest, rest - len(context))` tokens of what remains; the context (persona) gets whatever is
left. Every segment keeps its head. Every input that loses a token is counted.

Speed: identical triples are encoded and scored once, batches are length-sorted, the encoder runs under bf16
autocast where the CPU supports it while the head stays fp32 (bf16 rounding must not manufacture ties).
Heavy imports (torch, transformers) happen when a model is loaded, never at module import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.models.ngram_head import NgramHead
from tailorbench.models.release_memory import trim_heap
from tailorbench.models.reward_encoding import RewardEncoder, pad_batch
from tailorbench.models.reward_format import FEATURES, NGRAM_FEATURE, RewardFormat, Triple, char_bigrams, read_format

# the checkpoint's sidecar, read and written where its format is defined (`reward_format.py`); named here too for
# the scripts and tests that load a checkpoint through this module
from tailorbench.models.reward_format import SIDECAR as SIDECAR
from tailorbench.models.reward_format import read_sidecar as read_sidecar
from tailorbench.models.reward_format import write_format as write_format

#: names of the one-output head in common sequence classifiers
_HEAD_NAMES = ("score", "classifier", "out_proj", "v_head")


def resolve_precision(precision: str, device: str = "cpu") -> str:
    """`auto` -> bf16 where the hardware runs bf16 fast (CPUs with AVX512-BF16 or AMX, CUDA), else fp32."""
    import torch

    if precision not in ("auto", "bf16", "fp32"):
        raise ConfigError(f"precision must be auto, bf16 or fp32, got {precision!r}")
    if precision != "auto":
        return precision
    if device.startswith("cuda"):
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    cpu = torch.cpu
    fast = bool(getattr(cpu, "_is_avx512_bf16_supported", lambda: False)()) or bool(
        getattr(cpu, "_is_amx_tile_supported", lambda: False)()
    )
    return "bf16" if fast else "fp32"


def ensure_pad_token(tokenizer: Any, model: Any | None = None) -> str | None:
    """Guard: batching needs a pad token. Reuse eos/sep/unk when missing; returns a note when it set one."""
    note = None
    if tokenizer.pad_token is None:
        for candidate in ("eos_token", "sep_token", "unk_token"):
            token = getattr(tokenizer, candidate, None)
            if token is not None:
                tokenizer.pad_token = token
                note = f"tokenizer had no pad token; using its {candidate} {token!r}"
                break
        else:
            raise ConfigError("tokenizer has no pad, eos, sep or unk token to pad batches with")
    if model is not None and getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return note


def fp32_head(model: Any) -> str | None:
    """Run the classification head outside autocast, in fp32 (the parameters stay untouched, so saving and
    the state dict are unchanged). Returns the head's name, or None if none was found."""
    import torch

    for name in _HEAD_NAMES:
        head = getattr(model, name, None)
        if isinstance(head, torch.nn.Module):
            original: Callable[..., Any] = head.forward

            def forward(x: Any, *args: Any, _orig: Callable[..., Any] = original, **kwargs: Any) -> Any:
                with torch.autocast(device_type=x.device.type, enabled=False):
                    return _orig(x.float(), *args, **kwargs)

            head.forward = forward
            return name
    return None


def head_outputs(path: str) -> int:
    """How many outputs the checkpoint's classification head has: for a sequence classifier, as its config.json
    declares them (`id2label` or `num_labels`; neither is transformers' default, two); 1 for anything else (a
    base encoder: a fresh one-output head is made, where transformers' default would be two)."""
    from transformers import PretrainedConfig

    try:
        raw, _ = PretrainedConfig.get_config_dict(path)
    except (OSError, ValueError):
        return 1
    if not any(str(a).endswith("ForSequenceClassification") for a in raw.get("architectures") or ()):
        return 1
    if "id2label" in raw and isinstance(raw["id2label"], dict):
        return max(1, len(raw["id2label"]))
    if "num_labels" in raw:
        return max(1, int(raw["num_labels"]))
    return 2  # a sequence classifier saved with transformers' default labels (recent versions omit them)


class HFRewardModel:
    """A loaded reward model: `score(triples)` -> (fp32 scores, truncated flags), in input order.

    A one-output head's logit is the reward; a two-output head (a chosen/rejected classifier) gives the
    probability of its last output, softmax(logits)[-1], as the Personalized RewardBench authors score such
    models (`evaluation/pointwise.py`)."""

    def __init__(
        self,
        path: str,
        *,
        max_length: int | None = None,
        precision: str = "auto",
        batch_size: int = 32,
        device: str = "cpu",
        model: Any | None = None,
        tokenizer: Any | None = None,
        fmt: RewardFormat | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self._torch = torch
        self.path = path
        self.device = device
        self.batch_size = batch_size
        self.fmt = fmt or read_format(path) or RewardFormat()
        if max_length is not None:
            self.fmt.max_length = max_length
        missing: list[str] = []
        loaded_here = model is None
        try:
            self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
            if model is None:
                # a checkpoint without a trained score head gets a fresh one: the same one on every run
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(0)
                    model, info = AutoModelForSequenceClassification.from_pretrained(
                        path, num_labels=head_outputs(path), output_loading_info=True)
                missing = sorted(info.get("missing_keys", ()))
            self.model = model
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load reward model {path!r}: {exc}") from exc
        self.outputs = int(self.model.config.num_labels)
        if self.outputs not in (1, 2):
            raise ConfigError(f"reward model {path!r} has {self.outputs} outputs; expected 1 (a reward) or 2 (the "
                              "probability of the last output is the reward)")
        self.notes = [n for n in [ensure_pad_token(self.tokenizer, self.model)] if n]
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit and self.fmt.max_length > limit:
            self.notes.append(f"max_length {self.fmt.max_length} is past the model's {limit} positions: inputs are "
                              f"cut at {limit}")
            self.fmt.max_length = int(limit)
        if self.outputs == 2:
            self.notes.append("two-output head: the reward is softmax(logits)[-1], the probability of the last "
                              "output")
        if missing:
            self.notes.append(f"no trained score head in the checkpoint ({', '.join(missing)}): initialised with "
                              "seed 0, so its scores carry no preference until it is trained (tailor train-rm)")
        if loaded_here:
            self.model.to(device).eval()
            self.head = fp32_head(self.model)
        self.precision = resolve_precision(precision, device)
        self.encoder = RewardEncoder(self.tokenizer, self.fmt)
        self._embeddings: dict[str, np.ndarray] = {}
        #: the answer n-gram head of a checkpoint trained with `answer_ngrams` (training sets it after the fit)
        self.ngrams: NgramHead | None = None
        if NGRAM_FEATURE in self.fmt.features and Path(path).is_dir():
            self.ngrams = NgramHead.load(path)

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.path,
            "precision": self.precision,
            "format": "chat_template" if self.encoder.chat else "segment_pair",
            "head": "softmax(logits)[-1]" if self.outputs == 2 else "logit",
            **asdict(self.fmt),
            "truncated": dict(self.encoder.truncated),
            "notes": self.notes,
        }

    def forward(self, batch: dict[str, Any]) -> Any:
        """fp32 logits of one padded batch (gradients flow when the caller allows them)."""
        torch = self._torch
        batch = {k: v.to(self.device) for k, v in batch.items()}
        with torch.autocast(device_type=self.device.split(":")[0], dtype=torch.bfloat16,
                            enabled=self.precision == "bf16"):
            logits = self.model(**batch).logits
        if logits.shape[-1] == 2:  # a chosen/rejected classifier: the probability of the last output
            return torch.softmax(logits.float(), dim=-1)[:, -1]
        return logits.float().reshape(-1)

    def score_encoded(self, encoded: Sequence[dict[str, Any]], answers: Sequence[str]) -> np.ndarray:
        """Scores of pre-encoded inputs, length-sorted batches, returned in input order."""
        torch = self._torch
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]["input_ids"]))
        out = np.zeros(len(encoded), dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                logits = self.forward(pad_batch([encoded[i] for i in idx], self.tokenizer.pad_token_id))
                out[idx] = logits.cpu().numpy()
                trim_heap()
        if self.fmt.length_weight is not None:
            out += self.fmt.length_weight * self.fmt.length_feature(answers)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised mean-pooled embeddings from the base encoder (length-sorted batches, cached by text);
        each text is cut at `max_length` tokens."""
        torch = self._torch
        todo = sorted({t for t in texts if t not in self._embeddings}, key=len)
        base = getattr(self.model, "base_model", self.model)
        with torch.inference_mode(), torch.autocast(device_type=self.device.split(":")[0], dtype=torch.bfloat16,
                                                    enabled=self.precision == "bf16"):
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start : start + self.batch_size]
                batch = self.tokenizer(chunk, truncation=True, max_length=self.fmt.max_length, padding=True,
                                       return_tensors="pt").to(self.device)
                hidden = base(**batch).last_hidden_state.float()
                mask = batch["attention_mask"].unsqueeze(-1).float()
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                pooled = torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy()
                self._embeddings.update(zip(chunk, pooled))
                trim_heap()
        return np.stack([self._embeddings[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    def raw_features(self, triples: Sequence[Triple], names: Sequence[str] | None = None) -> np.ndarray:
        """(n, k) unstandardised feature values (FEATURES) of each triple's answer; no context gives 0 for the
        persona features."""
        names = list(self.fmt.features if names is None else names)
        out = np.zeros((len(triples), len(names)), dtype=np.float64)
        bigrams: dict[str, set[str]] = {}

        def grams(text: str) -> set[str]:
            if text not in bigrams:
                bigrams[text] = char_bigrams(text)
            return bigrams[text]

        for j, name in enumerate(names):
            if name not in FEATURES:
                from tailorbench.registry import did_you_mean

                raise ConfigError(f"unknown feature {name!r}{did_you_mean(name, FEATURES)}; known: "
                                  f"{', '.join(FEATURES)}")
            if name == "length":
                out[:, j] = [np.log1p(len(a)) for _, _, a in triples]
            elif name == "persona_overlap":
                out[:, j] = [np.log1p(len(grams(a) & grams(c))) if c else 0.0 for c, _, a in triples]
            elif name == NGRAM_FEATURE:
                if self.ngrams is None:
                    raise ConfigError(f"{self.path}: feature {NGRAM_FEATURE} needs its fitted n-gram head")
                out[:, j] = self.ngrams.score([a for _, _, a in triples])
            elif name == "persona_overlap_share":
                out[:, j] = [len(grams(a) & grams(c)) / max(len(grams(a)), 1) if c else 0.0 for c, _, a in triples]
            else:
                slot = 0 if name == "persona_cosine" else 1
                with_text = [k for k, t in enumerate(triples) if t[slot]]
                if with_text:
                    first = self.embed([str(triples[k][slot]) for k in with_text])
                    ans = self.embed([triples[k][2] for k in with_text])
                    out[with_text, j] = (first * ans).sum(1)
        return out

    def feature_term(self, triples: Sequence[Triple]) -> np.ndarray:
        """sum_k w_k * standardised feature k, per triple (zeros when the format has no features)."""
        fmt = self.fmt
        if not fmt.features:
            return np.zeros(len(triples))
        z = (self.raw_features(triples) - np.array(fmt.feature_mean)) / np.maximum(np.array(fmt.feature_std), 1e-6)
        return z @ np.array(fmt.feature_weights, dtype=np.float64)

    def check_truncation(self, triples: Sequence[Triple]) -> np.ndarray:
        """Whether `score` will count each triple as truncated, before any scoring (RewardEncoder.check); a
        format without the encoder score truncates nothing."""
        if not self.fmt.encoder_score:
            return np.zeros(len(triples), dtype=bool)
        return self.encoder.check(triples)

    def score(self, triples: Sequence[Triple], dedup: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(scores, truncated flags) per triple; identical triples are encoded and scored once. A format without
        the encoder score (`encoder_score: false`) is the feature term alone: nothing is encoded or truncated."""
        unique = list(dict.fromkeys(triples)) if dedup else list(triples)
        if self.fmt.encoder_score:
            encoded, flags = self.encoder.encode(unique)
            scores = self.score_encoded(encoded, [t[2] for t in unique])
        else:
            flags = np.zeros(len(unique), dtype=bool)
            scores = np.zeros(len(unique), dtype=np.float64)
            if self.fmt.length_weight is not None:
                scores += self.fmt.length_weight * self.fmt.length_feature([t[2] for t in unique])
        scores = scores + self.feature_term(unique)
        if not dedup:
            return scores, flags
        row = {t: k for k, t in enumerate(unique)}
        index = np.fromiter((row[t] for t in triples), np.int64, len(triples))
        return scores[index], flags[index]
