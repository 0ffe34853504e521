"""The feature-head recipe of `tailor train-rm --train-scope features`: a Bradley-Terry fit of the weights of
standardised answer features (and of the optional answer n-gram head) on the training pairs.

Shared by the trainer (the checkpoint's fit), cross-fitting (one fit per fold) and the experiments' screens, so
all of them fit the same way; none of them imports another for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.train.config import RMTrainConfig

if TYPE_CHECKING:
    from tailorbench.models.ngram_head import NgramHead


def fit_feature_weights(feats: Any, pairs: Sequence[tuple[int, int]], margin: float = 0.0,
                        l2: float = 0.0, ngram_diff: Any | None = None,
                        ngram_l2: float = 0.0, pair_weights: Sequence[float] | None = None,
                        ) -> tuple[np.ndarray, dict[str, Any]]:
    """Bradley-Terry fit of the feature weights alone: minimise mean(-log sigma(w . (z_c - z_r) + v . (x_c - x_r)
    - margin)) + l2 * |w|^2 + ngram_l2 * |v|^2 over the training pairs (full batch, L-BFGS from zero; convex, so
    deterministic). `ngram_diff` is the optional sparse (pairs x n-grams) block of `answer_ngrams`; its weights
    v follow the dense ones in the returned array. `pair_weights` turns the mean into a weighted mean (used by
    the experiments' tier-weight screen)."""
    import torch

    diff = feats[[a for a, _ in pairs]] - feats[[b for _, b in pairs]]
    n_dense = diff.shape[1]
    n_sparse = ngram_diff.shape[1] if ngram_diff is not None else 0
    w = torch.zeros(n_dense + n_sparse, dtype=torch.float32, requires_grad=True)
    weight = None if pair_weights is None else torch.tensor(pair_weights, dtype=torch.float32) / sum(pair_weights)
    opt = torch.optim.LBFGS([w], max_iter=500 if n_sparse else 200, tolerance_grad=1e-9,
                            line_search_fn="strong_wolfe")

    def margins() -> Any:
        out = diff @ w[:n_dense]
        if ngram_diff is not None:
            out = out + torch.sparse.mm(ngram_diff, w[n_dense:, None]).reshape(-1)
        return out

    def closure() -> Any:
        opt.zero_grad()
        per_pair = -torch.nn.functional.logsigmoid(margins() - margin)
        fit = per_pair.mean() if weight is None else (per_pair * weight).sum()
        loss = (fit + l2 * (w[:n_dense] ** 2).sum()
                + ngram_l2 * (w[n_dense:] ** 2).sum())
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        margin_ = margins()
        loss = float(-torch.nn.functional.logsigmoid(margin_ - margin).mean())
        accuracy = float(((margin_ > 0).float() + 0.5 * (margin_ == 0).float()).mean())
    weights = w.detach().numpy().astype(np.float64)
    info: dict[str, Any] = {"weights": weights[:n_dense].tolist(), "train_loss": loss, "train_accuracy": accuracy}
    if n_sparse:
        info["ngram_weight_norm"] = float(np.linalg.norm(weights[n_dense:]))
    return weights, info


@dataclass
class FeatureFit:
    """A fitted feature-head recipe: the dense features' training mean and sd, their weights, the answer n-gram
    head (with `answer_ngrams`), the standardised training matrix and the fit's summary."""

    dense: list[str]
    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray
    head: NgramHead | None
    z: Any  # torch.Tensor (torch is imported lazily)
    info: dict[str, Any]

    def scores(self, raw: np.ndarray, answers: Sequence[str]) -> np.ndarray:
        """The recipe's score of answers given by their raw dense features (rows) and texts."""
        out = ((raw - self.mean) / self.std) @ self.weights
        if self.head is not None:
            out = out + self.head.score(list(answers))
        return np.asarray(out, dtype=np.float64)

    def margins(self, raw_chosen: np.ndarray, raw_rejected: np.ndarray, chosen: Sequence[str],
                rejected: Sequence[str]) -> np.ndarray:
        """score(chosen) - score(rejected) for pairs given by their raw dense features and answers."""
        return self.scores(raw_chosen, chosen) - self.scores(raw_rejected, rejected)


def fit_recipe(cfg: RMTrainConfig, raw: np.ndarray, answers: Sequence[str], pairs: Sequence[tuple[int, int]],
               pair_weights: Sequence[float] | None = None) -> FeatureFit:
    """Standardise the dense features `raw` (rows: the distinct training triples, columns: `cfg.features`
    without `answer_ngrams`), build the n-gram vocabulary on their `answers` when asked, and fit all weights
    (`fit_feature_weights`). Shared by `fit_features` and the experiments, so both fit the same way."""
    import torch

    from tailorbench.models.ngram_head import NgramHead, NgramVocabulary, pair_difference_matrix
    from tailorbench.models.reward_format import NGRAM_FEATURE

    dense = [f for f in cfg.features if f != NGRAM_FEATURE]
    mean, std = raw.mean(0), raw.std(0)
    std[std == 0] = 1.0
    z = torch.tensor((raw - mean) / std, dtype=torch.float32)
    ngram_diff, vocab = None, None
    if NGRAM_FEATURE in cfg.features:
        vocab = NgramVocabulary.fit(list(answers), (cfg.ngram_range[0], cfg.ngram_range[1]), cfg.ngram_min_df,
                                    cfg.ngram_max_features)
        if not vocab.terms:
            raise ConfigError(f"answer_ngrams: no character n-gram occurs in {cfg.ngram_min_df} or more of the "
                              f"{len(set(answers))} distinct training answers; lower ngram_min_df")
        ngram_diff = pair_difference_matrix(vocab, list(answers), pairs)
    weights, info = fit_feature_weights(z, pairs, cfg.margin, cfg.feature_l2, ngram_diff, cfg.ngram_l2,
                                        pair_weights)
    head = NgramHead(vocab, weights[len(dense):]) if vocab is not None else None
    return FeatureFit(dense, mean, std, weights[: len(dense)], head, z, info)


def fit_features(cfg: RMTrainConfig, scorer: Any, triples: Sequence[Any],
                 pairs: Sequence[tuple[int, int]]) -> tuple[Any, dict[str, Any]]:
    """Fit the feature-head recipe on the distinct training triples (`fit_recipe`) and write it into
    `scorer.fmt` (and the n-gram head into `scorer.ngrams`); returns the standardised feature matrix in
    `cfg.features` order and the fit's summary."""
    import torch

    from tailorbench.models.reward_format import NGRAM_FEATURE

    dense = [f for f in cfg.features if f != NGRAM_FEATURE]
    fitted = fit_recipe(cfg, scorer.raw_features(triples, dense), [t[2] for t in triples], pairs)
    fit = fitted.info
    params = {name: (float(m), float(s), float(w))
              for name, m, s, w in zip(dense, fitted.mean, fitted.std, fitted.weights)}
    columns = {name: fitted.z[:, k] for k, name in enumerate(dense)}
    if fitted.head is not None:
        scorer.ngrams = fitted.head
        params[NGRAM_FEATURE] = (0.0, 1.0, 1.0)  # the head's score enters as is: its weights carry the scale
        columns[NGRAM_FEATURE] = torch.tensor(scorer.ngrams.score([t[2] for t in triples]), dtype=torch.float32)
        fit["ngram_terms"] = len(fitted.head.vocab.terms)
        fit["top_ngrams"] = scorer.ngrams.top_terms()
    fmt = scorer.fmt
    fmt.features = list(cfg.features)
    fmt.feature_mean, fmt.feature_std, fmt.feature_weights = ([params[n][k] for n in cfg.features] for k in range(3))
    fit["weights"] = list(fmt.feature_weights)
    return torch.stack([columns[n] for n in cfg.features], dim=1), fit
