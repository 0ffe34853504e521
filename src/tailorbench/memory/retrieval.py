"""Retrieval over per-user memory: `bm25` (bm25s over our CJK-aware tokens), `dense` (an HF encoder, default the
shipped MiniLM), `hybrid` (reciprocal rank fusion of both).

Why per user: the RAG setting and the profiler only ever look at one user's memory, so each user gets an index
of their own items and a query never sees another user's memory. Dense vectors of all users are encoded in one
batch (the encoder is the cost), then sliced per user. Results are (item position, score) lists, best first,
ties broken by position so runs are reproducible. Lexical hits with score 0 (no shared token) are not returned:
a short list is honest, padding it with arbitrary items is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from tailorbench.errors import ConfigError, require_extra
from tailorbench.memory.tokenize import tokenize
from tailorbench.registry import did_you_mean

RetrieverKind = Literal["bm25", "dense", "hybrid"]
RETRIEVERS: tuple[str, ...] = ("bm25", "dense", "hybrid")
#: the usual RRF constant (Cormack et al., 2009): damps the weight of the very first ranks
RRF_K = 60

Hits = list[tuple[int, float]]


class Encoder(Protocol):
    """What dense retrieval needs from an encoder (models.encoder_hf.HFEncoder satisfies it)."""

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]: ...

    def describe(self) -> dict[str, Any]: ...


def top_k(scores: np.ndarray, k: int, positive_only: bool = False) -> Hits:
    """Best k (position, score), best first, ties by position."""
    n = len(scores)
    if n == 0 or k <= 0:
        return []
    k = min(k, n)
    # every item tied with the k-th best is a candidate, so ties are broken by position, not by partition order
    part = np.nonzero(scores >= np.partition(scores, n - k)[n - k])[0] if k < n else np.arange(n)
    picked = part[np.lexsort((part, -scores[part]))][:k]
    return [(int(i), float(scores[i])) for i in picked if not positive_only or scores[i] > 0]


class BM25Index:
    """bm25s over `tokenize` tokens for one corpus."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        require_extra("bm25s", "retrieval", "the bm25 retriever")
        import bm25s

        self.size = len(texts)
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        tokens = [tokenize(t) for t in texts]
        # bm25s cannot index an empty corpus or all-empty documents; such an index answers nothing
        self._empty = not any(tokens)
        if not self._empty:
            self._bm25.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        if self._empty:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokenize(query)), dtype=np.float32)

    def search(self, query: str, k: int) -> Hits:
        return top_k(self.scores(query), k, positive_only=True)


def rrf(rankings: Sequence[Hits], k: int, constant: int = RRF_K) -> Hits:
    """Reciprocal rank fusion: score = sum over rankings of 1 / (constant + rank)."""
    fused: dict[int, float] = {}
    for hits in rankings:
        for rank, (pos, _) in enumerate(hits, start=1):
            fused[pos] = fused.get(pos, 0.0) + 1.0 / (constant + rank)
    ranked = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:k]


@dataclass
class MemoryIndex:
    """Per-user indexes over a corpus {user_id: [texts]}; `search` answers (user_id, query) pairs in batch."""

    kind: str = "bm25"
    encoder: Encoder | None = None
    #: how many candidates each retriever contributes to the hybrid fusion
    fusion_depth: int = 50
    _bm25: dict[str, BM25Index] = field(default_factory=dict)
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)
    truncated: int = 0

    def __post_init__(self) -> None:
        if self.kind not in RETRIEVERS:
            raise ConfigError(f"unknown retriever {self.kind!r}{did_you_mean(self.kind, RETRIEVERS)}; choose one of "
                              f"{', '.join(RETRIEVERS)}")
        if self.kind != "bm25" and self.encoder is None:
            from tailorbench.models.encoder_hf import HFEncoder

            self.encoder = HFEncoder()

    @property
    def lexical(self) -> bool:
        return self.kind in ("bm25", "hybrid")

    @property
    def dense(self) -> bool:
        return self.kind in ("dense", "hybrid")

    def build(self, corpus: Mapping[str, Sequence[str]]) -> MemoryIndex:
        if self.lexical:
            self._bm25 = {user: BM25Index(texts) for user, texts in corpus.items()}
        if self.dense:
            assert self.encoder is not None
            users = list(corpus)
            flat = [t for u in users for t in corpus[u]]
            vectors, flags = self.encoder.encode(flat) if flat else (np.zeros((0, 1), np.float32), np.zeros(0))
            self.truncated += int(np.sum(flags))
            start = 0
            for user in users:
                n = len(corpus[user])
                self._vectors[user] = vectors[start : start + n]
                start += n
        return self

    def search(self, queries: Sequence[tuple[str, str]], k: int) -> list[Hits]:
        """Top-k hits for each (user_id, query); a user without memory gets no hits."""
        if k < 1:
            raise ConfigError(f"top-k must be at least 1, got {k}")
        depth = max(k, self.fusion_depth) if self.kind == "hybrid" else k
        lexical: list[Hits] = []
        dense: list[Hits] = []
        if self.lexical:
            empty = BM25Index([])
            lexical = [self._bm25.get(user, empty).search(query, depth) for user, query in queries]
        if self.dense:
            assert self.encoder is not None
            qvec = np.zeros((0, 1), dtype=np.float32)
            if queries:
                qvec, flags = self.encoder.encode([q for _, q in queries])
                self.truncated += int(np.sum(flags))
            for (user, _), vec in zip(queries, qvec):
                matrix = self._vectors.get(user)
                dense.append([] if matrix is None or not len(matrix) else top_k(matrix @ vec, depth))
        if self.kind == "bm25":
            return lexical
        if self.kind == "dense":
            return dense
        return [rrf([lex, den], k) for lex, den in zip(lexical, dense)]

    def describe(self) -> dict[str, Any]:
        tokenizer = "cjk-unigram+bigram, latin-word" if self.lexical else None
        out: dict[str, Any] = {"retriever": self.kind, "tokenizer": tokenizer}
        if self.dense and self.encoder is not None:
            out["encoder"] = self.encoder.describe()
            out["truncated_inputs"] = self.truncated
        if self.kind == "hybrid":
            out["fusion"] = {"method": "rrf", "constant": RRF_K, "depth": self.fusion_depth}
        return out
