"""The three estimates of one cell (a split × tier, a split, everything), under the design its labels came from.

`three_estimates` takes every item of the cell: the proxy's Ŷ for all, the human Y where `labeled`, each item's
inclusion probability and stratum, and returns the human-only, proxy-only and human-anchored estimates with the
effective number of human labels the proxy was worth: n × se²(human-only) / se²(anchored), the human labels a
human-only estimate would need for the anchored interval's width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tailorbench.estimation.ppi import (
    Interval,
    active_classical,
    active_ppi,
    classical_mean,
    crossppi_mean,
    ppi_mean,
    proxy_only,
    stratified_classical,
    stratified_ppi,
)

__all__ = ["FEW_LABELS", "CellEstimate", "cross_estimates", "three_estimates"]

#: below this many human labels a cell's note warns that its normal interval may be too narrow
FEW_LABELS = 10


@dataclass(frozen=True)
class CellEstimate:
    n_items: int
    n_labels: int
    human_only: Interval | None
    proxy_only: Interval
    anchored: Interval | None
    effective_labels: float | None
    note: str | None = None


def _design_estimates(y: np.ndarray, yhat: np.ndarray, labeled: np.ndarray, pi: np.ndarray, design: str,
                      strata: np.ndarray, alpha: float) -> tuple[Interval, Interval]:
    if design == "active":
        return active_classical(y, labeled, pi, alpha), active_ppi(y, yhat, labeled, pi, alpha)
    if design == "stratified" and len(set(strata[labeled].tolist())) > 1:
        return (stratified_classical(y, labeled, strata, alpha),
                stratified_ppi(y, yhat, labeled, strata, alpha))
    unl = ~labeled
    anchored = ppi_mean(y[labeled], yhat[labeled], yhat[unl], alpha) if unl.any() \
        else classical_mean(y[labeled], alpha)
    return classical_mean(y[labeled], alpha), anchored


def three_estimates(y: np.ndarray, yhat: np.ndarray, labeled: np.ndarray, pi: np.ndarray | None = None,
                    design: str = "uniform", strata: np.ndarray | None = None,
                    alpha: float = 0.05) -> CellEstimate:
    """Human-only, proxy-only and human-anchored estimates of the mean of Y over a cell's items (design
    `uniform`: a simple random sample; `stratified`: one per stratum, `strata` given; `active`: independent
    draws with probabilities `pi`). With fewer than two human labels (or two in a stratum) only the proxy-only
    estimate is given, with a note saying why."""
    yhat = np.asarray(yhat, dtype=float)
    labeled = np.asarray(labeled, dtype=bool)
    y = np.where(labeled, np.asarray(y, dtype=float), 0.0)
    pi = np.ones(len(yhat)) if pi is None else np.asarray(pi, dtype=float)
    strata = np.zeros(len(yhat), dtype=int) if strata is None else np.asarray(strata)
    n_labels = int(labeled.sum())
    proxy = proxy_only(yhat, alpha)
    if n_labels < 2:
        return CellEstimate(len(yhat), n_labels, None, proxy, None, None,
                            f"{n_labels} human label(s): an anchored estimate needs at least 2")
    try:
        human, anchored = _design_estimates(y, yhat, labeled, pi, design, strata, alpha)
    except ValueError as exc:
        return CellEstimate(len(yhat), n_labels, None, proxy, None, None, str(exc))
    effective = n_labels * human.se**2 / anchored.se**2 if anchored.se > 0 else None
    note = (f"only {n_labels} human labels: a normal interval this small may be too narrow"
            if n_labels < FEW_LABELS else None)
    return CellEstimate(len(yhat), n_labels, human, proxy, anchored, effective, note)


def cross_estimates(y: np.ndarray, folds: np.ndarray, trained: np.ndarray, labeled: np.ndarray,
                    alpha: float = 0.05) -> CellEstimate:
    """The three estimates with a cross-fitted proxy (crossppi; a uniform sample): each labelled item's Ŷ is the
    mean of the fold models that were not trained on it; the unlabelled items keep every fold's Ŷ (N, K). A
    labelled item every fold model was trained on has no out-of-fold Ŷ: a ValueError naming how many."""
    labeled = np.asarray(labeled, dtype=bool)
    pooled = folds.mean(axis=1)
    proxy = proxy_only(pooled, alpha)
    n_labels = int(labeled.sum())
    if n_labels < 2 or labeled.all():
        return CellEstimate(len(pooled), n_labels, None, proxy, None, None,
                            f"{n_labels} human label(s) of {len(pooled)} items: crossppi needs 2 or more and "
                            "an unlabelled item")
    held_out = ~trained[labeled]
    if not held_out.any(axis=1).all():
        raise ValueError(f"{int((~held_out.any(axis=1)).sum())} labelled item(s) are in the training data of "
                         "every proxy run: no out-of-fold prediction")
    oof = (folds[labeled] * held_out).sum(axis=1) / held_out.sum(axis=1)
    human = classical_mean(y[labeled], alpha)
    anchored = crossppi_mean(y[labeled], oof, folds[~labeled], alpha)
    effective = n_labels * human.se**2 / anchored.se**2 if anchored.se > 0 else None
    note = (f"only {n_labels} human labels: a normal interval this small may be too narrow"
            if n_labels < FEW_LABELS else None)
    return CellEstimate(len(pooled), n_labels, human, proxy, anchored, effective, note)
