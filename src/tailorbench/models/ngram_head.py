"""Answer n-gram head: a linear score over the answer's character n-grams (TF-IDF), fitted with the other
feature weights of a feature-head reward model (`features: [..., answer_ngrams]`, docs/reward_models.md).

Why characters: PersonaFeedback is mostly Chinese, where words are not space-separated and the shipped MiniLM's
English vocabulary maps many characters to [UNK]; character 1-2 grams read every script without a tokenizer.
The weighting follows scikit-learn's `TfidfVectorizer(analyzer="char", sublinear_tf=True)` (lower-cased,
whitespace runs collapsed, smooth idf, L2-normalised rows) so that the head is easy to reason about and to
check against it; it is implemented here on plain Python + torch so that scoring needs nothing else.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.files import Output, as_output

#: file a feature-head checkpoint with `answer_ngrams` carries next to its sidecar
NGRAMS_FILE = "tailorbench_ngrams.json"
_SPACES = re.compile(r"\s\s+")


def char_ngrams(text: str, lo: int, hi: int) -> Counter[str]:
    """Counts of the character n-grams (lo <= n <= hi) of the lower-cased text, whitespace runs collapsed."""
    text = _SPACES.sub(" ", text.lower())
    counts: Counter[str] = Counter()
    for n in range(lo, hi + 1):
        counts.update(text[i : i + n] for i in range(len(text) - n + 1))
    return counts


@dataclass
class NgramVocabulary:
    """The n-grams kept (min_df, max_features by corpus frequency) and their smooth idf."""

    ngram_range: tuple[int, int]
    terms: list[str]
    idf: np.ndarray
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {t: k for k, t in enumerate(self.terms)}

    @classmethod
    def fit(cls, texts: Sequence[str], ngram_range: tuple[int, int] = (1, 2), min_df: int = 2,
            max_features: int = 50_000) -> NgramVocabulary:
        """Vocabulary of the distinct `texts`: n-grams in at least `min_df` texts, the `max_features` most
        frequent (ties broken by the n-gram, so the result does not depend on input order)."""
        unique = list(dict.fromkeys(texts))
        df: Counter[str] = Counter()
        tf: Counter[str] = Counter()
        for text in unique:
            counts = char_ngrams(text, *ngram_range)
            df.update(counts.keys())
            tf.update(counts)
        kept = sorted((t for t, d in df.items() if d >= min_df), key=lambda t: (-tf[t], t))[:max_features]
        kept.sort()
        n = len(unique)
        idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in kept], dtype=np.float64)
        return cls(tuple(ngram_range), kept, idf)  # type: ignore[arg-type]

    def rows(self, texts: Iterable[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: (column indices, L2-normalised sublinear tf-idf values) over the vocabulary."""
        out = []
        for text in texts:
            counts = char_ngrams(text, *self.ngram_range)
            cols = np.fromiter((self.index[t] for t in counts if t in self.index), np.int64)
            tfs = np.fromiter((counts[t] for t in counts if t in self.index), np.float64, len(cols))
            values = (1.0 + np.log(tfs)) * self.idf[cols] if len(cols) else np.zeros(0)
            norm = float(np.sqrt((values**2).sum()))
            out.append((cols, values / norm if norm > 0 else values))
        return out


def pair_difference_matrix(vocab: NgramVocabulary, texts: Sequence[str], pairs: Sequence[tuple[int, int]]) -> Any:
    """Sparse (pairs x vocabulary) torch matrix of tfidf(texts[chosen]) - tfidf(texts[rejected])."""
    import torch

    rows = vocab.rows(texts)
    r_idx, c_idx, vals = [], [], []
    for p, (a, b) in enumerate(pairs):
        for (cols, values), sign in ((rows[a], 1.0), (rows[b], -1.0)):
            r_idx.append(np.full(len(cols), p, np.int64))
            c_idx.append(cols)
            vals.append(sign * values)
    indices = torch.tensor(np.stack([np.concatenate(r_idx), np.concatenate(c_idx)]))
    matrix = torch.sparse_coo_tensor(indices, torch.tensor(np.concatenate(vals), dtype=torch.float32),
                                     (len(pairs), len(vocab.terms)), check_invariants=True)
    return matrix.coalesce()


@dataclass
class NgramHead:
    """score(answer) = sum over its n-grams of tfidf * weight (a fitted vocabulary with one weight per n-gram)."""

    vocab: NgramVocabulary
    weights: np.ndarray

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return np.fromiter((float(values @ self.weights[cols]) for cols, values in self.vocab.rows(texts)),
                           np.float64, len(texts))

    def top_terms(self, k: int = 10) -> dict[str, list[tuple[str, float]]]:
        """The k n-grams that raise and that lower the score most (for the training summary)."""
        order = np.argsort(self.weights)
        pick = lambda idx: [(self.vocab.terms[i], round(float(self.weights[i]), 4)) for i in idx]  # noqa: E731
        return {"up": pick(order[::-1][:k]), "down": pick(order[:k])}

    def save(self, directory: Output | str | Path) -> None:
        """NGRAMS_FILE in a checkpoint folder: the claimed folder output of the verb that trained it, or a path of
        a folder (only that file is written there)."""
        payload = {"ngram_range": list(self.vocab.ngram_range),
                   "terms": {t: [float(self.vocab.idf[k]), float(self.weights[k])]
                             for k, t in enumerate(self.vocab.terms)}}  # all: each term is in the row norm
        as_output(directory, name=NGRAMS_FILE).write_text(None, json.dumps(payload, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, directory: str | Path) -> NgramHead:
        path = Path(directory) / NGRAMS_FILE
        from tailorbench.errors import DataError
        from tailorbench.files import load_json

        try:
            payload = load_json(path, dict, "the answer n-grams of a checkpoint (a JSON object)")
        except DataError as exc:
            raise ConfigError(f"the checkpoint uses answer_ngrams but {path} cannot be read: {exc}") from exc
        terms = sorted(payload["terms"])
        idf = np.array([payload["terms"][t][0] for t in terms], dtype=np.float64)
        weights = np.array([payload["terms"][t][1] for t in terms], dtype=np.float64)
        lo, hi = payload["ngram_range"]
        return cls(NgramVocabulary((int(lo), int(hi)), terms, idf), weights)
