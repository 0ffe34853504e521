"""`strict_majority` (binary gold where a tie is negative) and `merge_ratings`, added for the stage-2 analysis."""

from __future__ import annotations

import numpy as np
import pytest

from tailorbench.agreement import stats as st
from tailorbench.agreement.ratings import Rating, RatingSet, merge_ratings
from tailorbench.errors import DataError


def test_strict_majority_ties_are_negative() -> None:
    counts = np.array([[1, 2], [2, 1], [1, 1], [0, 0], [0, 3], [2, 2]], dtype=float)
    assert st.strict_majority(counts, 1).tolist() == [1, 0, 0, -1, 1, 0]
    # with the usual majority a tie has no label at all
    assert st.majority(counts).tolist() == [1, 0, -1, -1, 1, -1]


def test_merge_ratings_refuses_a_double_rating_and_mixed_types() -> None:
    a = RatingSet([Rating("i", "r", True, source="a", line=1)], ["a"])
    b = RatingSet([Rating("i", "r", False, source="b", line=4)], ["b"])
    with pytest.raises(DataError, match="already rated item 'i' in a:1"):
        merge_ratings([a, b])
    c = RatingSet([Rating("j", "r", "yes", source="c", line=2)], ["c"])
    with pytest.raises(DataError, match="one label type"):
        merge_ratings([a, c])
    assert len(merge_ratings([a]).ratings) == 1
