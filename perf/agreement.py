"""Benchmark: Fleiss' kappa with a 1,000-resample bootstrap CI on 10,000 items x 9 raters (goal < 1 s).

Baseline, measured in the same run: statsmodels' fleiss_kappa called once per resample on the resampled
table (what one writes without the sufficient-statistics trick), timed on 100 resamples and scaled to 1,000.
Run: .venv/bin/python perf/agreement.py
"""

from __future__ import annotations

import time

import numpy as np

from tailorbench.agreement import stats as st
from tailorbench.bootstrap import Resampler, percentile_ci

N_ITEMS, N_RATERS, K, B = 10_000, 9, 2, 1000


def main() -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(0, K, size=N_ITEMS)
    codes = np.where(rng.random((N_ITEMS, N_RATERS)) < 0.8, truth[:, None], rng.integers(0, K, (N_ITEMS, N_RATERS)))

    t0 = time.perf_counter()
    counts = st.category_counts(codes, K)
    block = st.fleiss_block(counts)
    kappa = st.fleiss_from_totals(block.sum(axis=0), K)[1]
    (tot,) = Resampler(N_ITEMS, B, seed=0).totals([block])
    ci = percentile_ci(st.fleiss_from_totals(tot, K)[:, 1])[0]
    ours = time.perf_counter() - t0

    from statsmodels.stats.inter_rater import fleiss_kappa

    table = counts
    base_b = 100
    t0 = time.perf_counter()
    brng = np.random.default_rng(1)
    for _ in range(base_b):
        fleiss_kappa(table[brng.integers(0, N_ITEMS, N_ITEMS)], method="fleiss")
    baseline = (time.perf_counter() - t0) * B / base_b

    print(f"items={N_ITEMS} raters={N_RATERS} categories={K} resamples={B}")
    print(f"fleiss kappa = {kappa:.4f}  95% CI [{ci.lo:.4f}, {ci.hi:.4f}]")
    print(f"tailorbench (kappa + CI): {ours:.3f} s  (goal < 1 s: {'met' if ours < 1 else 'MISSED'})")
    print(f"baseline statsmodels fleiss_kappa per resample: {baseline:.3f} s (scaled from {base_b})")
    print(f"speed-up: {baseline / ours:.1f}x")


if __name__ == "__main__":
    main()
