"""Agreement statistics as functions of per-item sufficient statistics (see bootstrap.py for why).

Each statistic has a `*_block` (one row of numbers per item) and a `*_from_totals` (the statistic from those
rows summed over items, vectorised over any leading axes). The point estimate is `f(block.sum(0))`; a
bootstrap resample is `f(W @ block)`. Undefined values are NaN here; report.py turns them into None with a
reason.
Codes are an items x raters integer matrix with -1 for a missing rating; categories are 0..k-1.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Level = Literal["nominal", "ordinal", "interval"]
WEIGHTINGS: tuple[str, ...] = ("none", "linear", "quadratic")


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with NaN where den is 0 (an undefined statistic, never a warning or an inf)."""
    num, den = np.broadcast_arrays(np.asarray(num, dtype=float), np.asarray(den, dtype=float))
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def category_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """n_ij: how many raters put item i in category j, shape (n_items, k)."""
    n = codes.shape[0]
    rows, cols = np.nonzero(codes >= 0)
    flat = rows * k + codes[rows, cols]
    return np.bincount(flat, minlength=n * k).reshape(n, k).astype(np.float64)


# --- Fleiss' kappa and percent agreement -----------------------------------------------------------


def per_item_agreement(counts: np.ndarray) -> np.ndarray:
    """P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)): the share of agreeing rater pairs; NaN if n_i < 2."""
    m = counts.sum(axis=1)
    return _div((counts * (counts - 1)).sum(axis=1), m * (m - 1))


def fleiss_block(counts: np.ndarray) -> np.ndarray:
    """Per item: [used, P_i, n_i1..n_ik, n_i, t_i1..t_ik] with t_ij = n_ij (n_i - n_ij) / (n_i (n_i - 1)).

    Items with fewer than two ratings have no agreeing pairs to count: their row is all zeros (excluded).
    """
    m = counts.sum(axis=1)
    used = (m >= 2).astype(float)
    safe = np.where(m >= 2, m * (m - 1), 1.0)
    p_i = (counts * (counts - 1)).sum(axis=1) / safe * used
    t = counts * (m[:, None] - counts) / safe[:, None] * used[:, None]
    return np.column_stack([used, p_i, counts * used[:, None], m * used, t])


def fleiss_from_totals(totals: np.ndarray, k: int) -> np.ndarray:
    """[P_bar, kappa, kappa_1..kappa_k] from summed fleiss_block rows (leading axes kept).

    P_bar is the mean P_i over items with >= 2 ratings; p_j pools all their ratings, so with a constant number
    of ratings per item this is exactly Fleiss (1971); with varying numbers each item's P_i uses its own n_i.
    """
    n_items = totals[..., 0]
    p_bar = _div(totals[..., 1], n_items)
    p = _div(totals[..., 2 : 2 + k], totals[..., 2 + k, None])
    p_e = (p**2).sum(axis=-1)
    kappa = _div(p_bar - p_e, 1.0 - p_e)
    per_cat = 1.0 - _div(totals[..., 3 + k : 3 + 2 * k], n_items[..., None] * p * (1.0 - p))
    return np.concatenate([p_bar[..., None], kappa[..., None], per_cat], axis=-1)


def fleiss_kappa(codes: np.ndarray, k: int) -> float:
    """Fleiss' kappa of a code matrix (convenience wrapper)."""
    return float(fleiss_from_totals(fleiss_block(category_counts(codes, k)).sum(axis=0), k)[1])


# --- Cohen's kappa ---------------------------------------------------------------------------------


def weight_matrices(k: int) -> np.ndarray:
    """Disagreement weights (3, k, k) for none / linear / quadratic, on category ranks as sklearn does."""
    idx = np.arange(k)
    dist = np.abs(idx[:, None] - idx[None, :]).astype(float)
    return np.stack([(dist > 0).astype(float), dist, dist**2])


def pair_block(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Per item: one-hot of the (a, b) category cell of the confusion matrix; zeros unless both rated."""
    both = (a >= 0) & (b >= 0)
    out = np.zeros((a.shape[0], k * k))
    rows = np.nonzero(both)[0]
    out[rows, a[rows] * k + b[rows]] = 1.0
    return out


def cohen_from_totals(totals: np.ndarray, k: int) -> np.ndarray:
    """Cohen's kappa [none, linear, quadratic] from a summed confusion matrix: 1 - sum(w O) / sum(w E)."""
    obs = totals.reshape(*totals.shape[:-1], k, k)
    n = obs.sum(axis=(-1, -2))
    exp = _div(obs.sum(axis=-1)[..., :, None] * obs.sum(axis=-2)[..., None, :], n[..., None, None])
    w = weight_matrices(k)
    num = (obs[..., None, :, :] * w).sum(axis=(-1, -2))
    den = (exp[..., None, :, :] * w).sum(axis=(-1, -2))
    return 1.0 - _div(num, den)


def cohen_kappa(a: np.ndarray, b: np.ndarray, k: int, weights: str = "none") -> float:
    """Cohen's kappa of two raters over the items both rated (convenience wrapper)."""
    values = cohen_from_totals(pair_block(a, b, k).sum(axis=0), k)
    return float(values[WEIGHTINGS.index(weights)])


# --- Krippendorff's alpha --------------------------------------------------------------------------


def alpha_block(counts: np.ndarray) -> np.ndarray:
    """Per item: its coincidences (n_uc n_uk - [c=k] n_uc) / (m_u - 1), flattened; zero if m_u < 2."""
    m = counts.sum(axis=1)
    k = counts.shape[1]
    pairs = counts[:, :, None] * counts[:, None, :]
    pairs[:, np.arange(k), np.arange(k)] -= counts
    scale = np.where(m >= 2, 1.0 / np.where(m >= 2, m - 1, 1.0), 0.0)
    return (pairs * scale[:, None, None]).reshape(counts.shape[0], k * k)


def _distances(n_c: np.ndarray, level: Level, values: np.ndarray | None) -> np.ndarray:
    k = n_c.shape[-1]
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(k), (*n_c.shape[:-1], k, k))
    if values is None:
        raise ValueError(f"{level} alpha needs ordered categories")
    if level == "interval":
        d = (values[:, None] - values[None, :]) ** 2
        return np.broadcast_to(d, (*n_c.shape[:-1], k, k))
    # ordinal: (sum of n_g for g between c and k inclusive - (n_c + n_k) / 2) ** 2, on ranks
    cs = np.cumsum(n_c, axis=-1)
    lo = np.minimum.outer(np.arange(k), np.arange(k))
    hi = np.maximum.outer(np.arange(k), np.arange(k))
    between = cs[..., hi] - cs[..., lo] + n_c[..., lo]
    return (between - (n_c[..., :, None] + n_c[..., None, :]) / 2.0) ** 2


def alpha_from_totals(totals: np.ndarray, k: int, level: Level, values: np.ndarray | None = None) -> np.ndarray:
    """Krippendorff's alpha = 1 - sum(o d) / sum(e d), e_ck = (n_c n_k - [c=k] n_c) / (n - 1)."""
    obs = totals.reshape(*totals.shape[:-1], k, k)
    n_c = obs.sum(axis=-1)
    n = n_c.sum(axis=-1)
    exp = n_c[..., :, None] * n_c[..., None, :]
    exp = exp - n_c[..., :, None] * np.eye(k)
    exp = _div(exp, (n - 1.0)[..., None, None])
    d = _distances(n_c, level, values)
    return 1.0 - _div((obs * d).sum(axis=(-1, -2)), (exp * d).sum(axis=(-1, -2)))


def krippendorff_alpha(codes: np.ndarray, k: int, level: Level = "nominal", values: np.ndarray | None = None) -> float:
    """Krippendorff's alpha of a code matrix with missing ratings (convenience wrapper)."""
    block = alpha_block(category_counts(codes, k))
    vals = values if values is not None or level == "nominal" else np.arange(k, dtype=float)
    return float(alpha_from_totals(block.sum(axis=0), k, level, vals))


# --- majority label and agreement with it ----------------------------------------------------------


def majority(counts: np.ndarray) -> np.ndarray:
    """Majority category per item, or -1 when the item has no rating or the top count is tied (tie policy:
    a tie has no majority; it is never broken by category order or at random)."""
    top = counts.max(axis=1)
    n_top = (counts == top[:, None]).sum(axis=1)
    winner = counts.argmax(axis=1)
    return np.where((top > 0) & (n_top == 1), winner, -1)


def strict_majority(counts: np.ndarray, positive: int) -> np.ndarray:
    """Binary gold per item: `positive` when more than half of the ratings are positive, else the most
    frequent other category (a tie counts as not positive, as in the Re-Centering study's gold); -1 when the
    item has no rating. Unlike `majority`, a tie is decided (to the negative side), so no item is left out."""
    total = counts.sum(axis=1)
    pos = counts[:, positive] > total / 2.0
    others = counts.copy()
    others[:, positive] = -1.0
    negative = others.argmax(axis=1)
    return np.where(total == 0, -1, np.where(pos, positive, negative))


def vs_majority_block(rater: np.ndarray, gold: np.ndarray, k: int) -> np.ndarray:
    """Per item: [used, agree, tp_1..k, fp_1..k, fn_1..k]; used when both rater and majority exist."""
    used = (rater >= 0) & (gold >= 0)
    cats = np.arange(k)
    pred = (rater[:, None] == cats) & used[:, None]
    true = (gold[:, None] == cats) & used[:, None]
    agree = (rater == gold) & used
    return np.column_stack([used, agree, pred & true, pred & ~true, ~pred & true]).astype(float)


def vs_majority_from_totals(totals: np.ndarray, k: int, positive: int | None) -> np.ndarray:
    """[accuracy, precision, recall, F1] for category `positive`, or macro-averaged over categories that
    occur in the rater's labels or the majority's (positive=None)."""
    acc = _div(totals[..., 1], totals[..., 0])
    tp = totals[..., 2 : 2 + k]
    fp = totals[..., 2 + k : 2 + 2 * k]
    fn = totals[..., 2 + 2 * k : 2 + 3 * k]
    prec, rec, f1 = _div(tp, tp + fp), _div(tp, tp + fn), _div(2 * tp, 2 * tp + fp + fn)
    if positive is not None:
        return np.stack([acc, prec[..., positive], rec[..., positive], f1[..., positive]], axis=-1)
    seen = (tp + fp + fn) > 0
    # a class the rater never predicted has precision 0 (not undefined) when it occurs in the majority
    prec = np.where(seen & np.isnan(prec), 0.0, prec)
    rec = np.where(seen & np.isnan(rec), 0.0, rec)
    n_seen = seen.sum(axis=-1)
    macro = [_div(np.where(seen, x, 0.0).sum(axis=-1), n_seen) for x in (prec, rec, f1)]
    return np.stack([acc, *macro], axis=-1)
