"""Statistics against reference implementations (property tests) and textbook examples worked by hand."""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from hypothesis.extra.numpy import arrays
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from tailorbench.agreement import stats as st

TOL = 1e-9


@hs.composite
def full_matrix(draw: hs.DrawFn) -> tuple[np.ndarray, int]:
    k = draw(hs.integers(2, 5))
    n = draw(hs.integers(2, 40))
    r = draw(hs.integers(2, 8))
    return draw(arrays(np.int64, (n, r), elements=hs.integers(0, k - 1))), k


@hs.composite
def sparse_matrix(draw: hs.DrawFn) -> tuple[np.ndarray, int]:
    codes, k = draw(full_matrix())
    holes = draw(arrays(np.bool_, codes.shape))
    return np.where(holes, -1, codes), k


@settings(max_examples=150, deadline=None)
@given(full_matrix())
def test_fleiss_matches_statsmodels(data: tuple[np.ndarray, int]) -> None:
    codes, k = data
    table, _ = aggregate_raters(codes, n_cat=k)
    with np.errstate(all="ignore"):
        expected = fleiss_kappa(table, method="fleiss")
    ours = st.fleiss_kappa(codes, k)
    if np.isnan(expected):
        assert np.isnan(ours)
    else:
        assert ours == pytest.approx(expected, abs=TOL)


@settings(max_examples=150, deadline=None)
@given(sparse_matrix(), hs.sampled_from(["none", "linear", "quadratic"]))
def test_cohen_matches_sklearn(data: tuple[np.ndarray, int], weights: str) -> None:
    codes, k = data
    a, b = codes[:, 0], codes[:, 1]
    both = (a >= 0) & (b >= 0)
    ours = st.cohen_kappa(a, b, k, weights)
    if both.sum() == 0:
        assert np.isnan(ours)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns before returning NaN for an undefined kappa
        expected = cohen_kappa_score(
            a[both], b[both], labels=list(range(k)), weights=None if weights == "none" else weights
        )
    if np.isnan(expected):
        assert np.isnan(ours)
    else:
        assert ours == pytest.approx(expected, abs=TOL)


@settings(max_examples=150, deadline=None)
@given(sparse_matrix(), hs.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_matches_krippendorff(data: tuple[np.ndarray, int], level: str) -> None:
    codes, k = data
    values = np.arange(k, dtype=float) * 1.5 + 2.0  # a non-trivial interval scale
    reliability = np.where(codes < 0, np.nan, values[np.clip(codes, 0, None)]).T
    counts = st.category_counts(codes, k)
    try:
        with np.errstate(all="ignore"):
            expected = krippendorff.alpha(reliability, level_of_measurement=level, value_domain=values)
    except ValueError:  # the package refuses data with no pairable unit
        assert not (counts.sum(axis=1) >= 2).any()
        return
    ours = st.krippendorff_alpha(codes, k, level, values)  # type: ignore[arg-type]
    if np.isnan(expected):
        assert np.isnan(ours)
    else:
        assert ours == pytest.approx(expected, abs=TOL)


def test_fleiss_wikipedia_worked_example() -> None:
    """Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories."""
    table = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ],
        dtype=float,
    )
    # by hand: p_j = column sums / 140; P_1 = (14*13)/(14*13) = 1, P_2 = (2+30+12+2)/182 = 0.253
    p_i = st.per_item_agreement(table)
    assert p_i[0] == 1.0
    assert p_i[1] == pytest.approx(46 / 182)
    totals = st.fleiss_block(table).sum(axis=0)
    p_bar, kappa = st.fleiss_from_totals(totals, 5)[:2]
    p = table.sum(axis=0) / 140  # 0.143, 0.200, 0.279, 0.150, 0.229
    p_e = float((p**2).sum())  # 0.213
    assert p_bar == pytest.approx(p_i.mean())
    assert p_bar == pytest.approx(0.378, abs=5e-4)
    assert p_e == pytest.approx(0.213, abs=5e-4)
    assert kappa == pytest.approx(0.210, abs=5e-4)


def test_fleiss_per_category_by_hand() -> None:
    # 3 items x 2 raters, binary: (0,0), (1,1), (0,1): p_0 = 3/6, t_0 = 0 + 0 + 1*1/2
    table = np.array([[2, 0], [0, 2], [1, 1]], dtype=float)
    out = st.fleiss_from_totals(st.fleiss_block(table).sum(axis=0), 2)
    assert out[0] == pytest.approx(2 / 3)  # P_bar
    assert out[1] == pytest.approx((2 / 3 - 0.5) / 0.5)  # kappa = 1/3
    assert out[2] == pytest.approx(1 - 0.5 / (3 * 0.25))  # kappa_0 = 1/3 (binary: same as overall)


def test_cohen_textbook_example() -> None:
    """Wikipedia's example: 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> kappa 0.4."""
    a = np.array([0] * 20 + [0] * 5 + [1] * 10 + [1] * 15)
    b = np.array([0] * 20 + [1] * 5 + [0] * 10 + [1] * 15)
    # p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7-0.5)/(1-0.5) = 0.4
    assert st.cohen_kappa(a, b, 2) == pytest.approx(0.4)


def test_alpha_krippendorff_textbook_example() -> None:
    """Krippendorff (2011), 'Computing Krippendorff's alpha-reliability', nominal example with missing data:
    4 observers, 12 units; alpha_nominal = 0.743, alpha_interval = 0.849."""
    nan = -1
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    ).T
    codes = np.where(data < 0, -1, data - 1)
    values = np.arange(1, 6, dtype=float)
    assert st.krippendorff_alpha(codes, 5, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert st.krippendorff_alpha(codes, 5, "interval", values) == pytest.approx(0.849, abs=5e-4)
    assert st.krippendorff_alpha(codes, 5, "ordinal", values) == pytest.approx(0.815, abs=5e-4)


def test_majority_ties_have_no_majority() -> None:
    counts = np.array([[2, 1], [1, 1], [0, 0], [0, 3]], dtype=float)
    assert st.majority(counts).tolist() == [0, -1, -1, 1]


def test_vs_majority_binary_and_macro() -> None:
    rater = np.array([1, 1, 0, 0, -1])
    gold = np.array([1, 0, 0, 1, 1])
    tot = st.vs_majority_block(rater, gold, 2).sum(axis=0)
    acc, prec, rec, f1 = st.vs_majority_from_totals(tot, 2, positive=1)
    assert (acc, prec, rec, f1) == (0.5, 0.5, 0.5, 0.5)
    macro = st.vs_majority_from_totals(tot, 2, positive=None)
    assert macro[3] == pytest.approx(0.5)


def test_degenerate_one_category_is_nan_not_crash() -> None:
    codes = np.zeros((5, 3), dtype=np.int64)
    assert np.isnan(st.fleiss_kappa(codes, 1))
    assert np.isnan(st.krippendorff_alpha(codes, 1))
    assert np.isnan(st.cohen_kappa(codes[:, 0], codes[:, 1], 1))
