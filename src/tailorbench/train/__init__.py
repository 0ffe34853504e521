"""Bradley-Terry reward-model training (`tailor train-rm`): config, data preparation, training loop.

This package's names below are the public API of the reward-model recipe, what a screen in `experiments/` (or
any other script) builds on: the config (training itself is `tb.train_rm`); data preparation (`clean_pairs`,
`split_by_user`, `distinct_triples`, `context_of`); the feature-head fit (`fit_recipe`, `fit_features`,
`fit_feature_weights`, `FeatureFit`); the scorer and its inputs (`HFRewardModel`, `RewardFormat`, `Triple`, `FEATURES`,
`NGRAM_FEATURE`, `resolve_model`); the answer n-gram head (`NgramHead`, `NgramVocabulary`,
`pair_difference_matrix`, `char_bigrams`); the cross-fit tables and research figures (`tier_accuracy`,
`overlap_accuracy`, `split_power`, `SPLIT_DRAWS`, `tier_overlap`); and `bootstrap_ci`, the user-resampling
interval every report uses. Each is imported from its module on first use (`import tailorbench.train` stays
light); `tests/test_import_graph.py` checks that `experiments/` imports nothing else of the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tailorbench.bootstrap import bootstrap_ci
    from tailorbench.datasets.pairs import tier_overlap
    from tailorbench.models.ngram_head import NgramHead, NgramVocabulary, pair_difference_matrix
    from tailorbench.models.reward_hf import (
        FEATURES,
        NGRAM_FEATURE,
        HFRewardModel,
        RewardFormat,
        Triple,
        char_bigrams,
    )
    from tailorbench.train.config import RMTrainConfig, load_config
    from tailorbench.train.cross_fit import SPLIT_DRAWS, overlap_accuracy, split_power, tier_accuracy
    from tailorbench.train.data import clean_pairs, context_of, distinct_triples, split_by_user
    from tailorbench.train.features import FeatureFit, fit_feature_weights, fit_features, fit_recipe
    from tailorbench.train.trainer import resolve_model

#: public name -> the module that defines it
_WHERE = {
    "tier_overlap": "tailorbench.datasets.pairs",
    "bootstrap_ci": "tailorbench.bootstrap",
    **dict.fromkeys(("NgramHead", "NgramVocabulary", "pair_difference_matrix"), "tailorbench.models.ngram_head"),
    **dict.fromkeys(("FEATURES", "NGRAM_FEATURE", "HFRewardModel", "RewardFormat", "Triple", "char_bigrams"),
                    "tailorbench.models.reward_hf"),
    **dict.fromkeys(("RMTrainConfig", "load_config"), "tailorbench.train.config"),
    **dict.fromkeys(("SPLIT_DRAWS", "overlap_accuracy", "split_power", "tier_accuracy"),
                    "tailorbench.train.cross_fit"),
    **dict.fromkeys(("clean_pairs", "context_of", "distinct_triples", "split_by_user"), "tailorbench.train.data"),
    **dict.fromkeys(("FeatureFit", "fit_feature_weights", "fit_features", "fit_recipe"),
                    "tailorbench.train.features"),
    "resolve_model": "tailorbench.train.trainer",
}

__all__ = ["FEATURES", "NGRAM_FEATURE", "SPLIT_DRAWS", "FeatureFit", "HFRewardModel", "NgramHead", "NgramVocabulary",
           "RMTrainConfig", "RewardFormat", "Triple", "bootstrap_ci", "char_bigrams", "clean_pairs", "context_of",
           "distinct_triples", "fit_feature_weights", "fit_features", "fit_recipe", "load_config",
           "overlap_accuracy", "pair_difference_matrix", "resolve_model", "split_by_user", "split_power",
           "tier_accuracy", "tier_overlap"]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
