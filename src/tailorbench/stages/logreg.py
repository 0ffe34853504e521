"""A small L2-regularised logistic regression in numpy: the trained head of both interventions.

Why not scikit-learn: product code does not import it (it is a test dependency, and the tests check this fit
against it). Features are standardised on the training rows; classes are weighted to balance (n / (2 n_c)), so
the default threshold 0.5 means "more likely accepted/relevant than not" even when one class is rare. Newton
steps with backtracking on the penalised loss converge in a handful of iterations for the few hundred to few
thousand rows a study has; the fit is deterministic (no random start).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.errors import ConfigError, DataError


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)))


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

    def save(self, path: str | Path) -> None:
        np.savez(Path(path), weights=self.weights, bias=np.array(self.bias), mean=self.mean, scale=self.scale,
                 threshold=np.array(self.threshold), meta=np.array(json.dumps(self.meta, ensure_ascii=False)))

    @classmethod
    def load(cls, path: str | Path) -> LogisticHead:
        path = Path(path)
        if not path.is_file():
            raise DataError(path, None, None, "no such file")
        try:
            with np.load(path, allow_pickle=False) as data:
                return cls(data["weights"], float(data["bias"]), data["mean"], data["scale"], float(data["threshold"]),
                           json.loads(str(data["meta"])))
        except (KeyError, ValueError, OSError) as exc:
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
