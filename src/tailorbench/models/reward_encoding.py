"""The encoding of (context, question, answer) triples for a reward model: the tokenizer's chat template or a
segment pair, truncated per segment by the format's budgets (the question capped, the answer's share, the
context what is left; every segment keeps its head, every truncated input counted), and the padding of a
batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.models.reward_format import RewardFormat, Triple


class RewardEncoder:
    """Triples -> token ids under the truncation policy, with per-input truncation flags. Segment token
    counts are cached by text (a persona or an answer recurs in many pairs)."""

    def __init__(self, tokenizer: Any, fmt: RewardFormat) -> None:
        self.tokenizer = tokenizer
        self.fmt = fmt
        self.chat = bool(getattr(tokenizer, "chat_template", None))
        self._offsets: dict[str, list[int]] = {}
        self.overhead = self._measure_overhead()
        self.truncated = {"context": 0, "question": 0, "answer": 0, "overflow": 0, "inputs": 0}
        #: encodings made by `check`, handed to the next `encode` of the same triple (no second tokenization)
        self._checked: dict[Triple, tuple[dict[str, Any], tuple[str, ...]]] = {}
        if fmt.max_length <= self.overhead + 8:
            raise ConfigError(f"max_length {fmt.max_length} leaves no room for text (format uses {self.overhead})")

    def _measure_overhead(self) -> int:
        """Tokens the format adds around the segments (special tokens, chat-template scaffolding)."""
        ids = self._encode_texts("x", "x")
        return max(0, len(ids["input_ids"]) - 2 * len(self._ends("x")))

    def _ends(self, text: str) -> list[int]:
        """Character end offset of each token of `text` (no special tokens), cached."""
        hit = self._offsets.get(text)
        if hit is None:
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            hit = [end for _, end in enc["offset_mapping"]]
            self._offsets[text] = hit
        return hit

    def _warm(self, texts: Sequence[str]) -> None:
        """Tokenize unseen segments in one batched call (much faster than one by one)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._offsets]
        for start in range(0, len(todo), 1024):
            chunk = todo[start : start + 1024]
            enc = self.tokenizer(chunk, add_special_tokens=False, return_offsets_mapping=True)
            for text, offsets in zip(chunk, enc["offset_mapping"]):
                self._offsets[text] = [end for _, end in offsets]

    def _cut(self, text: str, keep: int) -> str:
        ends = self._ends(text)
        if keep >= len(ends):
            return text
        return text[: ends[keep - 1]] if keep > 0 else ""

    def _encode_texts(self, first: str, answer: str) -> dict[str, Any]:
        if self.chat:
            messages = [{"role": "user", "content": first}, {"role": "assistant", "content": answer}]
            text = self.tokenizer.apply_chat_template(messages, tokenize=False)
            return dict(self.tokenizer(text, add_special_tokens=False))
        return dict(self.tokenizer(first, answer))

    def budget(self, n_context: int, n_question: int, n_answer: int) -> tuple[int, int, int]:
        """(context, question, answer) tokens kept under the policy."""
        fmt = self.fmt
        total = fmt.max_length - self.overhead - 2  # 2: the blank line joining context and question
        q_keep = min(n_question, fmt.question_cap, total // 2)
        rest = total - q_keep
        a_keep = min(n_answer, max(int(fmt.answer_share * rest), rest - n_context))
        c_keep = min(n_context, rest - a_keep)
        return c_keep, q_keep, a_keep

    def _encode_one(self, triple: Triple) -> tuple[dict[str, Any], tuple[str, ...]]:
        """Model input of one triple under the policy, and what was cut (`context`, `question`, `answer`,
        `overflow`; empty when nothing was)."""
        context, question, answer = triple
        context = context or ""
        nc, nq, na = len(self._ends(context)), len(self._ends(question)), len(self._ends(answer))
        kc, kq, ka = self.budget(nc, nq, na)
        parts = [name for name, n, keep in (("context", nc, kc), ("question", nq, kq), ("answer", na, ka))
                 if keep < n]
        c_text, q_text, a_text = self._cut(context, kc), self._cut(question, kq), self._cut(answer, ka)
        first = f"{c_text}\n\n{q_text}" if c_text else q_text
        enc = self._encode_texts(first, a_text)
        if len(enc["input_ids"]) > self.fmt.max_length:  # re-tokenizing at a cut can add a token
            parts.append("overflow")
            enc = {key: value[: self.fmt.max_length] for key, value in enc.items()}
        return enc, tuple(parts)

    def check(self, triples: Sequence[Triple]) -> np.ndarray:
        """Whether each triple will be truncated, known before any scoring and without counting it: the
        encodings are kept for the next `encode` of the same triples, which counts them (so a pre-work check
        costs no second tokenization and says exactly what scoring will count)."""
        self._warm([t for c, q, a in triples for t in (c or "", q, a)])
        flags = np.zeros(len(triples), dtype=bool)
        for k, triple in enumerate(triples):
            hit = self._checked.get(triple)
            if hit is None:
                hit = self._checked[triple] = self._encode_one(triple)
            flags[k] = bool(hit[1])
        return flags

    def encode(self, triples: Sequence[Triple]) -> tuple[list[dict[str, Any]], np.ndarray]:
        """Model inputs (input_ids, attention_mask, token_type_ids where used) and a truncated flag per triple."""
        self._warm([t for triple in triples if triple not in self._checked for t in (triple[0] or "", *triple[1:])])
        out: list[dict[str, Any]] = []
        flags = np.zeros(len(triples), dtype=bool)
        for k, triple in enumerate(triples):
            hit = self._checked.pop(triple, None)
            enc, parts = hit if hit is not None else self._encode_one(triple)
            for name in parts:
                self.truncated[name] += 1
            self.truncated["inputs"] += bool(parts)
            flags[k] = bool(parts)
            out.append(enc)
        return out, flags


def pad_batch(encoded: Sequence[dict[str, Any]], pad_id: int) -> dict[str, Any]:
    """Right-padded tensors for one batch (torch imported by the caller's process already)."""
    import torch

    width = max(len(e["input_ids"]) for e in encoded)
    ids = torch.full((len(encoded), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    types = torch.zeros((len(encoded), width), dtype=torch.long) if "token_type_ids" in encoded[0] else None
    for row, e in enumerate(encoded):
        n = len(e["input_ids"])
        ids[row, :n] = torch.tensor(e["input_ids"])
        mask[row, :n] = 1
        if types is not None:
            types[row, :n] = torch.tensor(e["token_type_ids"])
    batch: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
    if types is not None:
        batch["token_type_ids"] = types
    return batch
