"""The estimators equal the authors' library, `ppi-python`, to 1e-9 wherever it has the case: PPI++ with power
tuning (point and interval), fixed λ, sample weights, the classical interval and cross-prediction (crossppi)."""

from __future__ import annotations

import numpy as np
import pytest

from tailorbench.estimation.ppi import classical_mean, crossppi_mean, ppi_lambda, ppi_mean

ppi_py = pytest.importorskip("ppi_py", reason="the [estimate] extra (ppi-python) is not installed")

TOL = 1e-9


def _data(seed: int, n: int, big_n: int, binary: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal(n + big_n)
    if binary:
        yhat_all = (rng.random(n + big_n) < 1 / (1 + np.exp(-latent - 0.5))).astype(float)
        y = (rng.random(n) < 1 / (1 + np.exp(-latent[:n]))).astype(float)
    else:
        yhat_all = latent + 0.3 + 0.5 * rng.standard_normal(n + big_n)
        y = latent[:n] + rng.standard_normal(n)
    return y, yhat_all[:n], yhat_all[n:]


CASES = [(seed, n, big_n, binary) for seed, (n, big_n) in enumerate([(50, 500), (200, 2000), (31, 97), (400, 600)])
         for binary in (True, False)]


@pytest.mark.parametrize(("seed", "n", "big_n", "binary"), CASES)
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_power_tuned_ppi_equals_ppi_python(seed: int, n: int, big_n: int, binary: bool, alpha: float) -> None:
    y, yhat, yhat_u = _data(seed, n, big_n, binary)
    ours = ppi_mean(y, yhat, yhat_u, alpha)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u)
    assert ours.lo == pytest.approx(float(np.squeeze(lo)), abs=TOL)
    assert ours.hi == pytest.approx(float(np.squeeze(hi)), abs=TOL)
    assert ours.estimate == pytest.approx(float(np.squeeze(point)), abs=TOL)


@pytest.mark.parametrize("lam", [0.0, 0.37, 1.0])
def test_fixed_lambda_equals_ppi_python(lam: float) -> None:
    y, yhat, yhat_u = _data(7, 120, 900, True)
    ours = ppi_mean(y, yhat, yhat_u, 0.05, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=lam)
    assert (ours.lo, ours.hi) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=TOL)
    assert ours.estimate == pytest.approx(
        float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam))), abs=TOL)


def test_weighted_ppi_equals_ppi_python() -> None:
    y, yhat, yhat_u = _data(11, 150, 800, True)
    rng = np.random.default_rng(3)
    w, wu = rng.uniform(0.5, 3.0, len(y)), rng.uniform(0.5, 2.0, len(yhat_u))
    ours = ppi_mean(y, yhat, yhat_u, 0.05, w=w, w_unlabeled=wu)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, w=w, w_unlabeled=wu)
    assert (ours.lo, ours.hi) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=TOL)
    assert ours.estimate == pytest.approx(
        float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, w=w, w_unlabeled=wu))), abs=TOL)


def test_lambda_is_the_librarys() -> None:
    from ppi_py.ppi import _calc_lam_glm

    y, yhat, yhat_u = _data(5, 80, 400, False)
    first = yhat_u.mean() + (y - yhat).mean()
    theirs = _calc_lam_glm((y - first)[:, None], (yhat - first)[:, None], (yhat_u - first)[:, None], np.eye(1),
                           clip=True)
    assert ppi_lambda(y, yhat, yhat_u) == pytest.approx(float(theirs), abs=TOL)


@pytest.mark.parametrize("weighted", [False, True])
def test_classical_equals_ppi_python(weighted: bool) -> None:
    y, _, _ = _data(2, 90, 10, True)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y)) if weighted else None
    ours = classical_mean(y, 0.05, w)
    lo, hi = ppi_py.classical_mean_ci(y, w=w, alpha=0.05)
    assert (ours.lo, ours.hi) == pytest.approx((float(lo), float(hi)), abs=TOL)


def test_crossppi_equals_ppi_python() -> None:
    rng = np.random.default_rng(9)
    y = (rng.random(100) < 0.6).astype(float)
    yhat = np.clip(y * 0.6 + rng.random(100) * 0.5, 0, 1)
    yhat_u = rng.random((700, 5))
    ours = crossppi_mean(y, yhat, yhat_u, 0.05)
    lo, hi = ppi_py.crossppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
    assert (ours.lo, ours.hi) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=TOL)
    assert ours.estimate == pytest.approx(
        float(np.squeeze(ppi_py.crossppi_mean_pointestimate(y, yhat, yhat_u))), abs=TOL)
