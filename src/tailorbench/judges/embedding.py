"""`embedding[:MODEL]`: picks the answer whose embedding is closer (cosine) to the rendered persona and
question. A cheap, label-free reference point between the length baselines and LLM judges."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tailorbench.judges.base import JudgeBase, JudgeOptions, check_options, register_judge, truncation_warning
from tailorbench.models.encoder_hf import MULTILINGUAL_ENCODERS, HFEncoder
from tailorbench.options import as_int
from tailorbench.personas import cjk_share
from tailorbench.schema import JudgeInput, Verdict


class EmbeddingJudge(JudgeBase):
    batch_size = 256

    def __init__(self, model: str | None, max_length: int = 256) -> None:
        super().__init__()
        self.encoder = HFEncoder(model, max_length=max_length)

    @staticmethod
    def queries(inputs: Sequence[JudgeInput]) -> list[str]:
        return [f"{i.context}\n\n{i.question}" if i.context else i.question for i in inputs]

    def check_inputs(self, inputs: Sequence[JudgeInput]) -> list[str]:
        """Before any encoding: an English-only model on mostly CJK text, and how many distinct texts (persona +
        question, answers) are longer than max_length tokens (the encoder's own tokenizer and count)."""
        out: list[str] = []
        sample = "".join(i.question + i.answer_a for i in inputs[:200])
        if cjk_share(sample) > 0.5 and "minilm-l6" in self.encoder.path.lower().replace("_", "-"):
            out.append(
                "most of the text is CJK but the embedding model is English-only all-MiniLM-L6-v2; "
                f"use a multilingual encoder, e.g. embedding:{MULTILINGUAL_ENCODERS[0]} "
                f"(others: {', '.join(MULTILINGUAL_ENCODERS[1:])})"
            )
        texts = list(dict.fromkeys([*self.queries(inputs), *(i.answer_a for i in inputs),
                                    *(i.answer_b for i in inputs)]))
        cut = int(self.encoder.check(texts).sum()) if texts else 0
        line = truncation_warning(cut, len(texts), "texts", self.encoder.max_length,
                                  every="the model sees only the start of each text")
        return [*out, line] if line else out

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        # what the runner's pre-work check said (it is cached), for callers that go straight to prepare
        self.warnings.extend(w for w in self.check_inputs(inputs) if w not in self.warnings)

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        queries = self.queries(inputs)
        texts = list(dict.fromkeys([*queries, *(i.answer_a for i in inputs), *(i.answer_b for i in inputs)]))
        vectors, cut = self.encoder.encode(texts)
        row = {text: k for k, text in enumerate(texts)}
        out: list[Verdict] = []
        for query, item in zip(queries, inputs):
            q = vectors[row[query]]
            sa = float(q @ vectors[row[item.answer_a]])
            sb = float(q @ vectors[row[item.answer_b]])
            scores = {"A": sa, "B": sb}
            truncated = bool(cut[row[query]] or cut[row[item.answer_a]] or cut[row[item.answer_b]])
            if sa == sb:
                out.append(Verdict(status="abstain", scores=scores, truncated=truncated))
            else:
                out.append(Verdict(choice="A" if sa > sb else "B", scores=scores, truncated=truncated))
        return out

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, **self.encoder.describe(), "truncated_texts": self.encoder.truncated,
                "probability": "margin"}


@register_judge("embedding")
def _embedding(arg: str | None, options: JudgeOptions) -> EmbeddingJudge:
    extra = check_options("embedding", options.extra, ("max_length",))
    return EmbeddingJudge(arg, max_length=as_int("max_length", extra.get("max_length", 256), minimum=8))
