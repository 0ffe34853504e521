"""The input format of a reward-model checkpoint (`models/reward_hf.py` scores with it): truncation budgets,
the length and answer features a checkpoint adds to its score, and the sidecar file (`SIDECAR`) that carries
them with the checkpoint so `rm:OUT` scores exactly as `tailor train-rm` trained."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.files import Output, as_output

#: sidecar file a `tailor train-rm` checkpoint carries: input format, truncation and extra head parameters
SIDECAR = "tailorbench_rm.json"


#: (context or None, question, answer)
Triple = tuple[str | None, str, str]


#: answer features a checkpoint may add to its score (reward += sum_k w_k * (f_k - mean_k) / std_k)
FEATURES = {
    "length": "log(1 + characters of the answer)",
    "persona_overlap": "log(1 + distinct character bigrams of the answer that also occur in the context)",
    "persona_overlap_share": "share of the answer's distinct character bigrams that also occur in the context",
    "persona_cosine": "cosine of the encoder's mean-pooled embeddings of the context and of the answer",
    "question_cosine": "cosine of the encoder's mean-pooled embeddings of the question and of the answer",
    "answer_ngrams": "learned linear score of the answer's character 1-2 gram TF-IDF (models/ngram_head.py), "
                     "fitted jointly with the other weights",
}


#: the one feature that is itself learned (one weight per n-gram, stored in ngram_head.NGRAMS_FILE)
NGRAM_FEATURE = "answer_ngrams"


def char_bigrams(text: str) -> set[str]:
    """Distinct overlapping character pairs (works for Chinese, where words are not space-separated)."""
    return {text[i : i + 2] for i in range(len(text) - 1)}


@dataclass
class RewardFormat:
    """How a triple becomes model input; stored with a trained checkpoint so scoring repeats training."""

    max_length: int = 512
    #: share of the tokens left after the question that the answer may always keep
    answer_share: float = 0.5
    #: tokens the question may keep (it is usually short; it is cut only beyond this)
    question_cap: int = 96
    #: learned length feature: reward += weight * (log1p(chars(answer)) - mean) / std
    length_weight: float | None = None
    length_mean: float = 0.0
    length_std: float = 1.0
    #: extra answer features (names from FEATURES), their learned weights and standardisation
    features: list[str] = field(default_factory=list)
    feature_weights: list[float] = field(default_factory=list)
    feature_mean: list[float] = field(default_factory=list)
    feature_std: list[float] = field(default_factory=list)
    #: whether the sequence classifier's output is part of the reward (false: the feature term alone)
    encoder_score: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def length_feature(self, answers: Sequence[str]) -> np.ndarray:
        """Standardised log character length of each answer (the same measure the `longer` baseline uses)."""
        raw = np.log1p(np.fromiter((len(a) for a in answers), np.float64, len(answers)))
        return ((raw - self.length_mean) / max(self.length_std, 1e-6)).astype(np.float32)


def read_format(path: str | Path) -> RewardFormat | None:
    """The sidecar of a trained checkpoint, or None for a plain Hugging Face checkpoint."""
    sidecar = Path(path) / SIDECAR
    if not sidecar.is_file():
        return None
    from tailorbench.files import load_json

    data = load_json(sidecar, dict, "a trained checkpoint's sidecar (a JSON object)")
    known = RewardFormat.__dataclass_fields__
    return RewardFormat(**{k: v for k, v in data.get("format", {}).items() if k in known})


def read_sidecar(path: str | Path) -> dict[str, Any]:
    """The whole sidecar of a trained checkpoint (format, `trained_by`, setting ...), or {}."""
    sidecar = Path(path) / SIDECAR
    if not sidecar.is_file():
        return {}
    from tailorbench.errors import DataError
    from tailorbench.files import load_json

    try:
        data = load_json(sidecar, None, "a trained checkpoint's sidecar (a JSON object)")
    except DataError:
        return {}
    return data if isinstance(data, dict) else {}


def write_format(path: Output | str | Path, fmt: RewardFormat, extra: dict[str, Any] | None = None) -> None:
    """The sidecar (SIDECAR) in a checkpoint folder: the claimed folder output of the verb that trained it, or a
    path of a folder (only the sidecar is written there: the checkpoint beside it may be anyone's)."""
    as_output(path, name=SIDECAR).write_json(None, {"format": asdict(fmt), **(extra or {})})
