"""Style control for length, as LMArena does it: the length difference of the two answers as a normalised covariate
of the Bradley–Terry logistic regression, so the ratings are those of answers of equal length.

The normalisation is FastChat's (lm-sys/FastChat, fastchat/serve/monitor/rating_systems.py, `preprocess_for_style`
with `add_one=True`): the relative difference (len_a - len_b) / (len_a + len_b + 1), then standardised over the
battles fitted by its mean and its population standard deviation (`np.std`, ddof 0). arena-rank
(lmarena/arena-rank, examples/example_utils.py `add_style_feature_cols`, and arena_rank/utils/data_utils.py
`ContextualPairDataset.from_pandas`) does the same up to the "+ 1" (it replaces a zero total by 1) and a first
standardisation with ddof 1 that its second one undoes; a zero standard deviation (every battle of equal
lengths) is replaced by 1, as arena-rank does. We measure length in characters (the arena's answers are stored as
text; LMArena counts tokens), which the ratio makes nearly unit-free.

The penalty differs on purpose: FastChat puts an L2 penalty of 0.5 on every parameter of a summed log-likelihood
(negligible at LMArena's numbers of battles), arena-rank one of 1.0 on the covariate's coefficient over the mean
log-likelihood (which shrinks the coefficient whatever the number of battles). We fit the maximum-likelihood
estimate (`bt_fit.RIDGE` aside), so the reported length coefficient is the likelihood's, not a shrunken one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LengthFeature:
    """The standardised covariate per battle and the mean and standard deviation it was standardised with."""

    values: np.ndarray
    mean: float
    std: float


def length_feature(len_a: np.ndarray, len_b: np.ndarray) -> LengthFeature:
    """(len_a - len_b) / (len_a + len_b + 1), standardised over these battles (FastChat's normalisation)."""
    a = np.asarray(len_a, dtype=np.float64)
    b = np.asarray(len_b, dtype=np.float64)
    raw = (a - b) / (a + b + 1.0)
    mean = float(raw.mean()) if raw.size else 0.0
    std = float(raw.std()) if raw.size else 0.0
    if std == 0.0:
        std = 1.0
    return LengthFeature(values=(raw - mean) / std, mean=mean, std=std)
