"""The vectorised bootstrap: seeded, and in line with scipy's percentile bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from tailorbench.agreement import stats as st
from tailorbench.bootstrap import Resampler, percentile_ci


def _data(n: int = 400, raters: int = 5, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=n)
    noise = rng.random((n, raters)) < 0.35
    return np.where(noise, rng.integers(0, 3, size=(n, raters)), truth[:, None])


def test_same_seed_same_interval_other_seed_differs() -> None:
    block = st.fleiss_block(st.category_counts(_data(), 3))
    runs = [Resampler(block.shape[0], 500, seed).totals([block])[0] for seed in (1, 1, 2)]
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_weights_resample_each_item_count_n_times() -> None:
    for w in Resampler(50, 300, 0, chunk=128).weights():
        assert np.all(w.sum(axis=1) == 50)


def test_column_batches_give_the_same_totals(monkeypatch: pytest.MonkeyPatch) -> None:
    import tailorbench.bootstrap as bs

    blocks = [np.random.default_rng(i).random((30, 3)) for i in range(4)]
    whole = Resampler(30, 100, 7).totals(blocks)
    monkeypatch.setattr(bs, "_CELL_BUDGET", 100)
    batched = Resampler(30, 100, 7).totals(blocks)
    for a, b in zip(whole, batched):
        assert np.allclose(a, b)


def test_fleiss_ci_matches_scipy_percentile_bootstrap() -> None:
    codes = _data()
    counts = st.category_counts(codes, 3)
    block = st.fleiss_block(counts)
    (tot,) = Resampler(len(codes), 4000, 11).totals([block])
    ours = percentile_ci(st.fleiss_from_totals(tot, 3)[:, 1])[0]

    def kappa(idx: np.ndarray) -> float:
        return float(st.fleiss_from_totals(block[idx.astype(int)].sum(axis=0), 3)[1])

    ref = bootstrap(
        (np.arange(len(codes)),),
        kappa,
        n_resamples=4000,
        method="percentile",
        vectorized=False,
        random_state=np.random.default_rng(5),
    ).confidence_interval
    se = float(np.std(st.fleiss_from_totals(tot, 3)[:, 1]))
    # Monte-Carlo tolerance: percentile endpoints from 4000 resamples differ by well under a quarter SE
    assert ours.lo == pytest.approx(ref.low, abs=0.25 * se)
    assert ours.hi == pytest.approx(ref.high, abs=0.25 * se)
    point = st.fleiss_from_totals(block.sum(axis=0), 3)[1]
    assert ours.lo < point < ours.hi


def test_undefined_resamples_are_counted() -> None:
    samples = np.array([[0.1], [np.nan], [0.3], [0.2]])
    (ci,) = percentile_ci(samples)
    assert ci.n_undefined == 1
    assert ci.lo is not None and 0.1 <= ci.lo <= ci.hi <= 0.3
    (none,) = percentile_ci(np.full((3, 1), np.nan))
    assert none.as_list() == [None, None] and none.n_undefined == 3
