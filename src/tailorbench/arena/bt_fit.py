"""The numerical core of the arena's leaderboard: a weighted logistic regression with soft labels, fitted by
Newton's method for many bootstrap resamples at once, and the existence check of the Bradley–Terry estimate.

Why a solver of our own (numpy only) rather than a library: the product depends on numpy alone at run time (scipy,
scikit-learn and statsmodels are test dependencies), a Newton fit reaches the maximum of the likelihood to machine
precision in a handful of steps (so the leaderboard equals an independent fit to 1e-6, tests/arena/test_ratings.py),
and one resample's fit is a few small matrix products, so a thousand bootstrap resamples are stacked and solved
together.

The model: a row r has a design vector x_r (+1 for the contestant on side A, -1 for side B, and, with style
control, the length covariate), a label y_r in [0, 1] (1 a win of A, 0 a win of B, 0.5 a tie) and a weight w_r (how
many battles it stands for in one resample). The objective is the negative log-likelihood
    sum_r w_r (softplus(x_r . theta) - y_r x_r . theta) + ridge / 2 |theta|^2,
the Bradley–Terry likelihood with a tie as half a win each way. The ridge is tiny (`RIDGE`) and used only where it
is needed: in the bootstrap resamples, where it keeps the ratings finite when a resample leaves a rating bounded
on one side only (a contestant that won every battle it drew; see `strongly_connected`), and moves the others by
far less than resampling does; and on all battles only when the estimate does not exist (`ratings._fit_all`
fits without it first). The likelihood does not change when every rating moves by the same amount, so the
Hessian, singular along that direction, is completed along it: the Newton step is then the step within the
ratings that sum to a constant, and the optimum is not moved (a ridge makes the ratings sum to zero there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the L2 penalty on every parameter (natural log-odds units) where one is needed (module docstring): small next to
#: any resample's noise, large enough to stop a rating the data bound on one side only (at about +-20)
RIDGE = 1e-9
#: Newton steps at most per fit; an existing maximum is reached in under ten, an unbounded rating in ~30
MAX_ITER = 100
#: a fit has converged when no parameter moves by more than this (natural units; 1e-10 is ~2e-8 rating points)
TOL = 1e-10
#: halvings of a Newton step that would increase the objective, at most
_HALVINGS = 40
#: the Hessian's diagonal damping, relative to its mean diagonal
_JITTER = 1e-12
#: float64 cells of row outer products held at once by `_weighted_gram` (about 32 MB)
_GRAM_CELLS = 4_000_000


@dataclass(frozen=True)
class Fit:
    """Parameters (resamples x parameters) and which resamples converged."""

    theta: np.ndarray
    converged: np.ndarray


def _objective(theta: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, ridge: float) -> np.ndarray:
    d = theta @ x.T
    return (w * (np.logaddexp(0.0, d) - y * d)).sum(axis=1) + 0.5 * ridge * (theta * theta).sum(axis=1)


def _weighted_gram(v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """X' diag(v_k) X for every row v_k of `v`: one matrix product against the rows' outer products, a block of
    rows at a time (bounded memory however many battles)."""
    m, p = x.shape
    out = np.zeros((v.shape[0], p * p))
    block = max(1, _GRAM_CELLS // (p * p))
    for start in range(0, m, block):
        xs = x[start:start + block]
        out += v[:, start:start + block] @ (xs[:, :, None] * xs[:, None, :]).reshape(xs.shape[0], p * p)
    return out.reshape(v.shape[0], p, p)


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, *, rating_columns: int,
                 ridge: float = RIDGE) -> Fit:
    """Maximise the soft-label logistic likelihood for every row of `w` (resamples x rows) at once.

    `x` is (rows x parameters); `y` is (rows,) or (resamples x rows); the first `rating_columns` parameters are
    ratings (the model is invariant to shifting them together), the rest covariates. Damped Newton: a step that
    would increase the objective is halved, so each iteration improves every resample's fit."""
    w = np.atleast_2d(np.asarray(w, dtype=np.float64))
    y = np.broadcast_to(np.asarray(y, dtype=np.float64), w.shape)
    b, p = w.shape[0], x.shape[1]
    ones = np.zeros(p)
    ones[:rating_columns] = 1.0
    theta = np.zeros((b, p))
    converged = np.zeros(b, dtype=bool)
    eye = np.eye(p)
    value = _objective(theta, x, y, w, ridge)
    for _ in range(MAX_ITER):
        idx = np.flatnonzero(~converged)
        if idx.size == 0:
            break
        th, wi, yi = theta[idx], w[idx], y[idx]
        prob = 0.5 * (1.0 + np.tanh(0.5 * (th @ x.T)))
        grad = (wi * (prob - yi)) @ x + ridge * th
        hess = _weighted_gram(wi * prob * (1.0 - prob), x) + ridge * eye
        # complete the Hessian along the shift of all ratings (the likelihood is flat there, the optimum is not
        # moved: see the module docstring), scaled like the rest of it so the system stays well conditioned
        scale = np.maximum(np.trace(hess, axis1=1, axis2=2) / p, 1.0)
        hess = hess + scale[:, None, None] * np.outer(ones, ones)[None] / max(rating_columns, 1)
        # and keep it invertible where the fitted probabilities reach 0 or 1 (a rating the data do not bound): a
        # damping of the step only, the optimum (where the gradient vanishes) is not moved
        hess = hess + (_JITTER * scale)[:, None, None] * eye
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        f0 = value[idx]
        t = np.ones(idx.size)
        for _ in range(_HALVINGS):
            f1 = _objective(th - t[:, None] * step, x, yi, wi, ridge)
            worse = f1 > f0 + 1e-12 * np.abs(f0)
            if not worse.any():
                break
            t[worse] *= 0.5
        moved = t[:, None] * step
        theta[idx] = th - moved
        value[idx] = f1
        converged[idx] = np.abs(moved).max(axis=1) < TOL
    return Fit(theta=theta, converged=converged)


def strongly_connected(n: int, beats: np.ndarray) -> bool:
    """Whether every contestant reaches every other along "scored against" edges (`beats[i, j]`: i won or tied
    against j at least once). This is the condition under which the Bradley–Terry maximum-likelihood estimate
    exists and is unique up to a shift (Zermelo 1929; Ford 1957; Hunter 2004, "MM algorithms for generalized
    Bradley-Terry models", assumption 1); when it fails, some rating is bounded on one side only."""
    if n <= 1:
        return True
    reach = beats.astype(bool) | np.eye(n, dtype=bool)
    for k in range(n):
        reach = reach | (reach[:, [k]] & reach[[k], :])
    return bool(reach.all())
