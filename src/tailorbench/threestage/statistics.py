"""The statistics of the stages beyond `agreement/`: rank correlations, the logistic head of the interventions,
binary raters against the human majority on held-out items, the best-F1 threshold and the seeded split by users.

- Spearman's rho and Kendall's tau-b in numpy (product code does not import scipy), with seeded bootstrap CIs over
  items. Kendall's bootstrap is exact and vectorised: with item multiplicities w, the tau-b of the resample is
  (w' (Sx*Sy) w) / sqrt((w'|Sx| w)(w'|Sy| w)), Sx = sign(x_i - x_j) (self-pairs have sign 0), so all resamples
  cost one matrix product; memory is O(n^2) floats, fine for the few thousand items a study has.
- A small L2-regularised logistic regression in numpy, the trained head of both interventions. Why not
  scikit-learn: product code does not import it (it is a test dependency, and the tests check this fit against
  it). Features are standardised on the training rows; classes are weighted to balance (n / (2 n_c)), so the
  default threshold 0.5 means "more likely accepted/relevant than not" even when one class is rare. Newton steps
  with backtracking on the penalised loss converge in a handful of iterations for the few hundred to few thousand
  rows a study has; the fit is deterministic (no random start).
- Binary raters against the strict human majority on held-out items, the before/after figures of the
  interventions: every statistic comes from `agreement/` (vs-majority blocks, Cohen's kappa from confusion
  totals, one seeded bootstrap over items shared by all raters, so the differences between raters get paired
  CIs).
- Thresholds and splits: a score is not a vote, and picking a cut-off on the items it is judged on would flatter
  it, so cut-offs are chosen on one seeded part of the users and figures reported on the others.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.agreement import stats as st
from tailorbench.bootstrap import Resampler, percentile_ci
from tailorbench.errors import ConfigError, DataError
from tailorbench.files import Output, as_output, scratch

# --- rank correlations --------------------------------------------------------------------------------


def rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (as scipy.stats.rankdata's default)."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    starts = np.r_[True, sorted_x[1:] != sorted_x[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    counts = np.diff(np.r_[first, len(x)])
    avg = first + (counts + 1) / 2.0
    ranks = np.empty(len(x))
    ranks[order] = avg[group]
    return ranks


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    den = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / den) if den > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return _pearson(rankdata(x), rankdata(y)) if len(x) >= 2 else float("nan")


def _signs(v: np.ndarray) -> np.ndarray:
    return np.sign(v[:, None] - v[None, :])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    sx, sy = _signs(x), _signs(y)
    den = float(np.sqrt(np.abs(sx).sum() * np.abs(sy).sum()))
    return float((sx * sy).sum() / den) if den > 0 else float("nan")


def correlations(
    x: np.ndarray, y: np.ndarray, n_resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, Any]:
    """Spearman and Kendall tau-b of paired values with percentile bootstrap CIs (items resampled jointly)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    out: dict[str, Any] = {"n": n}
    if n < 3:
        out.update(spearman=None, kendall=None, note="fewer than 3 paired items")
        return out
    rs = Resampler(n, n_resamples, seed)
    sx, sy = _signs(x), _signs(y)
    both, ax, ay = sx * sy, np.abs(sx), np.abs(sy)
    rho, tau = [], []
    for w in rs.weights():
        tau.append((w @ both * w).sum(1) / np.sqrt((w @ ax * w).sum(1) * (w @ ay * w).sum(1)))
        for row in w:
            idx = np.repeat(np.arange(n), row.astype(int))
            rho.append(spearman(x[idx], y[idx]))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau_all = np.concatenate(tau)
    stats = (("spearman", spearman(x, y), np.asarray(rho)), ("kendall", kendall_tau_b(x, y), tau_all))
    for name, point, boots in stats:
        ci = percentile_ci(boots[:, None], level)[0]
        out[name] = None if not np.isfinite(point) else point
        out[f"{name}_ci"] = ci.as_list()
        if ci.n_undefined:
            out[f"{name}_undefined_resamples"] = ci.n_undefined
    if out["spearman"] is None:
        out["note"] = "undefined: one side is constant"
    return out


# --- the logistic head of the interventions -----------------------------------------------------------


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)))


@dataclass(frozen=True)
class HeadFit:
    """How an intervention's logistic head is fitted and judged: the share of users held out, the split and
    bootstrap seed, the L2 penalty, the decision threshold, the resamples and level of the intervals."""

    test_fraction: float = 0.5
    seed: int = 0
    l2: float = 1.0
    threshold: float = 0.5
    n_resamples: int = 1000
    level: float = 0.95


@dataclass
class LogisticHead:
    """Weights on standardised features, the intercept, the decision threshold and what it was trained on."""

    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray
    threshold: float = 0.5
    meta: dict[str, Any] = field(default_factory=dict)

    def proba(self, x: np.ndarray) -> np.ndarray:
        if x.ndim != 2 or x.shape[1] != self.weights.shape[0]:
            raise ConfigError(f"features have shape {x.shape}, the head expects {self.weights.shape[0]} columns")
        return _sigmoid(((x - self.mean) / self.scale) @ self.weights + self.bias)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.proba(x) >= self.threshold

    def save(self, path: Output | str | Path, name: str | None = None) -> None:
        """The head as one .npz file: `path` (a file), or the file `name` in a claimed folder output. Written in
        a scratch folder first, so the file appears whole (`np.savez` writes in place)."""
        with scratch("tailorbench-head-") as folder:
            np.savez(folder / "head.npz", weights=self.weights, bias=np.array(self.bias), mean=self.mean,
                     scale=self.scale, threshold=np.array(self.threshold),
                     meta=np.array(json.dumps(self.meta, ensure_ascii=False)))
            as_output(path, name=name).write_bytes(None, (folder / "head.npz").read_bytes())

    @classmethod
    def load(cls, path: str | Path) -> LogisticHead:
        path = Path(path)
        if not path.is_file():
            raise DataError(path, None, None, "no such file")
        try:
            with np.load(path, allow_pickle=False) as data:
                return cls(data["weights"], float(data["bias"]), data["mean"], data["scale"], float(data["threshold"]),
                           json.loads(str(data["meta"])))
        except (KeyError, ValueError, OSError, EOFError, TypeError, zipfile.BadZipFile) as exc:
            raise DataError(path, None, None, f"not a trained head written by tailorbench: {exc}") from None


def fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float = 1.0, balanced: bool = True, max_iter: int = 100, tol: float = 1e-9,
    threshold: float = 0.5, meta: dict[str, Any] | None = None,
) -> LogisticHead:
    """Minimise sum_i w_i logloss_i + l2/2 |weights|^2 (the intercept is not penalised) — scikit-learn's
    LogisticRegression(C=1/l2, class_weight="balanced") on the same standardised features."""
    y = np.asarray(y, dtype=float)
    if x.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ConfigError(f"need a (rows, features) matrix and one label per row, got {x.shape} and {y.shape}")
    counts = np.array([(y == 0).sum(), (y == 1).sum()])
    if counts.min() == 0:
        raise ConfigError(f"training needs both classes; got {int(counts[0])} negative, {int(counts[1])} positive")
    if l2 <= 0:
        raise ConfigError("--l2 must be positive")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    a = np.hstack([(x - mean) / scale, np.ones((x.shape[0], 1))])
    sw = np.where(y == 1, len(y) / (2 * counts[1]), len(y) / (2 * counts[0])) if balanced else np.ones(len(y))
    reg = np.full(a.shape[1], l2)
    reg[-1] = 0.0

    def loss(theta: np.ndarray) -> float:
        z = a @ theta
        return float((sw * (np.logaddexp(0.0, z) - y * z)).sum() + 0.5 * (reg * theta * theta).sum())

    theta = np.zeros(a.shape[1])
    current = loss(theta)
    iters = 0
    while iters < max_iter:
        iters += 1
        p = _sigmoid(a @ theta)
        grad = a.T @ (sw * (p - y)) + reg * theta
        hess = (a * (sw * p * (1 - p))[:, None]).T @ a + np.diag(reg) + 1e-10 * np.eye(a.shape[1])
        step = np.linalg.solve(hess, grad)
        t, candidate = 1.0, float("inf")
        while t > 1e-6:
            candidate = loss(theta - t * step)
            if candidate <= current:
                break
            t /= 2
        if candidate > current:  # no step lowers the loss: at the optimum up to rounding
            break
        theta = theta - t * step
        done = current - candidate <= tol * max(1.0, abs(current))
        current = candidate
        if done:
            break
    info = {"iterations": iters, "loss": current, "l2": l2, "balanced": balanced, "n_train": len(y),
            "n_positive": int(counts[1]), "n_negative": int(counts[0])}
    return LogisticHead(theta[:-1], float(theta[-1]), mean, scale, threshold, {**(meta or {}), "fit": info})


# --- binary raters vs the human majority, held-out items --------------------------------------------------


def _num(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def compare_to_majority(
    gold: Mapping[str, bool],
    raters: Mapping[str, Mapping[str, bool]],
    humans: Mapping[str, Mapping[str, bool]] | None = None,
    reference: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Per rater on the gold items: share positive, accuracy / precision / recall / F1 (positive class = True)
    and Cohen's kappa against the majority label, each with a CI; `mean_kappa_with_humans` = the plain mean of
    its kappa with each human (the paper's human-model kappa, on these items); with `reference`, every other
    rater's F1 and kappa minus the reference's, with paired bootstrap CIs. Votes for items without a gold label
    are counted (`n_without_gold`), not used."""
    items = sorted(gold)
    g = np.array([1 if gold[k] else 0 for k in items], dtype=int)
    codes = {name: np.array([(1 if v[k] else 0) if k in v else -1 for k in items], dtype=int)
             for name, v in raters.items()}
    vs = [st.vs_majority_block(c, g, 2) for c in codes.values()]
    pb = [st.pair_block(c, g, 2) for c in codes.values()]
    resampler = Resampler(len(items), n_resamples, seed)
    totals = resampler.totals(vs + pb) if items else []
    names = list(codes)
    out: dict[str, Any] = {"n_items": len(items), "share_positive_majority": _num(g.mean()) if items else None,
                           "raters": {}, "bootstrap": {"method": "percentile, resampling items",
                                                       "n_resamples": n_resamples, "seed": seed, "level": level}}
    boots: dict[str, dict[str, np.ndarray]] = {}
    for j, name in enumerate(names):
        c = codes[name]
        rated = c >= 0
        entry: dict[str, Any] = {"n": int(rated.sum()),
                                 "n_without_gold": sum(1 for k in raters[name] if k not in gold),
                                 "share_positive": _num((c[rated] == 1).mean()) if rated.any() else None}
        if items:
            point = st.vs_majority_from_totals(vs[j].sum(axis=0), 2, 1)
            kappa = st.cohen_from_totals(pb[j].sum(axis=0), 2)[0]
            b_vs = st.vs_majority_from_totals(totals[j], 2, 1)
            b_kappa = st.cohen_from_totals(totals[len(names) + j], 2)[:, 0]
            cis = percentile_ci(np.column_stack([b_vs, b_kappa]), level)
            for i, stat in enumerate(("accuracy", "precision", "recall", "f1")):
                entry[stat] = _num(point[i])
                entry[f"{stat}_ci"] = cis[i].as_list()
            entry["kappa"] = _num(kappa)
            entry["kappa_ci"] = cis[4].as_list()
            boots[name] = {"f1": b_vs[:, 3], "kappa": b_kappa}
        if humans:
            ks = _kappas_with_humans(c, humans, items)
            entry["mean_kappa_with_humans"] = float(np.mean(ks)) if ks else None
            entry["n_humans_with_kappa"] = len(ks)
        out["raters"][name] = entry
    if reference is not None and reference in boots:
        out["reference"] = reference
        out["gain_of_reference_over"] = _gains(out["raters"], boots, reference, level)
    return out


def _kappas_with_humans(c: np.ndarray, humans: Mapping[str, Mapping[str, bool]], items: list[str]) -> list[float]:
    """A rater's Cohen's kappa with each human on the items (the defined ones)."""
    ks = []
    for h in humans.values():
        hc = np.array([(1 if h[k] else 0) if k in h else -1 for k in items], dtype=int)
        value = st.cohen_kappa(c, hc, 2) if items else float("nan")
        if np.isfinite(value):
            ks.append(value)
    return ks


def _gains(raters: dict[str, Any], boots: dict[str, dict[str, np.ndarray]], reference: str,
           level: float) -> dict[str, Any]:
    """Every other rater's F1 and kappa minus the reference's, with paired bootstrap CIs."""
    ref = raters[reference]
    deltas: dict[str, Any] = {}
    for name in raters:
        if name == reference or name not in boots:
            continue
        e = raters[name]
        d: dict[str, Any] = {}
        for stat in ("f1", "kappa"):
            a, b = ref.get(stat), e.get(stat)
            d[f"{stat}_gain"] = a - b if a is not None and b is not None else None
            d[f"{stat}_gain_ci"] = percentile_ci(boots[reference][stat] - boots[name][stat], level)[0].as_list()
        deltas[name] = d
    return deltas


# --- thresholds and the split by users ----------------------------------------------------------------


def split_users(users: Sequence[str], val_fraction: float, seed: int) -> set[str]:
    """The validation users: a seeded shuffle of the distinct users, the first `val_fraction` of them."""
    if not 0 < val_fraction < 1:
        raise ConfigError("--eval-fraction must be between 0 and 1")
    distinct = sorted(set(users))
    if len(distinct) < 2:
        raise ConfigError("a validation split by user needs at least two users")
    order = np.random.default_rng(seed).permutation(len(distinct))
    n_val = min(len(distinct) - 1, max(1, round(val_fraction * len(distinct))))
    return {distinct[i] for i in order[:n_val]}


def heldout_users(users: Sequence[str], test_fraction: float, seed: int) -> set[str]:
    """The users an intervention is judged on: those `split_users(users, 1 - test_fraction, seed)` does not pick
    for fitting — so with the same seed and `--eval-fraction` (a baseline's `val_fraction` is 1 - it), a
    baseline's votes cover exactly these users and it can be compared on them."""
    if not 0 < test_fraction < 1:
        raise ConfigError("--eval-fraction must be between 0 and 1")
    return set(users) - split_users(users, 1 - test_fraction, seed)


def choose_threshold(scores: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """The cut-off (vote relevant when score >= t) with the best F1 on these items; ties go to the higher t."""
    if not gold.any():
        raise ConfigError("the validation users have no attribute the human majority marks relevant")
    best_t, best_f1 = float("inf"), -1.0
    for t in np.unique(scores)[::-1]:
        pred = scores >= t
        tp = float((pred & gold).sum())
        f1 = 2 * tp / (pred.sum() + gold.sum())
        if f1 > best_f1:
            best_t, best_f1 = float(t), f1
    return best_t, best_f1
