"""The agree report: shape of the JSON and degenerate input explained, not crashed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tailorbench.agreement.ratings import Rating, RatingSet
from tailorbench.agreement.report import AgreeOptions, agreement_report
from tailorbench.errors import DataError

FAST = AgreeOptions(n_resamples=100, seed=1)


def _set(rows: list[tuple[str, str, object, str]]) -> RatingSet:
    return RatingSet([Rating(i, r, lab, g, "mem", n) for n, (i, r, lab, g) in enumerate(rows, 1)], ["mem"])  # type: ignore[arg-type]


def _random(n: int = 60, seed: int = 0, labels: tuple[str, ...] = ("ok", "unsure", "bad")) -> RatingSet:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        t = rng.integers(len(labels))
        for r, g in (("h1", "human"), ("h2", "human"), ("h3", "human"), ("m1", "model"), ("m2", "model")):
            lab = labels[t] if rng.random() < 0.7 else labels[rng.integers(len(labels))]
            rows.append((f"i{i}", r, lab, g))
    return _set(rows)


def test_report_keys_and_order() -> None:
    rep = agreement_report(_random(), ["ok", "unsure", "bad"], FAST)
    json.dumps(rep, allow_nan=False)
    assert rep["n_items"] == 60 and rep["n_raters"] == 5
    assert set(rep["krippendorff_alpha"]) == {"nominal", "ordinal", "interval"}
    assert len(rep["pairwise_cohen_kappa"]) == 10
    assert "kappa_quadratic" in rep["pairwise_cohen_kappa"][0]
    assert set(rep["cohen_kappa_by_pair_type"]) == {"human-human", "human-model", "model-model"}
    assert set(rep["groups"]) == {"human", "model"}
    lo, hi = rep["fleiss_kappa"]["ci"]
    assert lo < rep["fleiss_kappa"]["value"] < hi
    inside = [v for v in rep["vs_majority"] if v["rater"] == "h1" and v["group"] == "human"]
    assert inside[0]["leave_self_out"] is True


def test_string_labels_without_order_are_nominal_only() -> None:
    rep = agreement_report(_random(), None, FAST)
    assert set(rep["krippendorff_alpha"]) == {"nominal", "note"}
    assert "kappa_linear" not in rep["pairwise_cohen_kappa"][0]
    assert any("never ordered alphabetically" in n for n in rep["notes"])


def test_integer_labels_are_ordered_by_value() -> None:
    rows = [("a", "x", 3, "human"), ("a", "y", 1, "human"), ("b", "x", 2, "human"), ("b", "y", 2, "human")]
    rep = agreement_report(_set(rows), None, FAST)
    assert rep["scale"] == "numeric" and rep["categories"] == [1, 2, 3]
    assert "interval" in rep["krippendorff_alpha"]


def test_one_rater_is_explained() -> None:
    rep = agreement_report(_set([("a", "x", "ok", "human"), ("b", "x", "bad", "human")]), None, FAST)
    assert rep["fleiss_kappa"]["value"] is None
    assert "only one rater" in rep["fleiss_kappa"]["note"]
    assert rep["pairwise_cohen_kappa"] == []


def test_one_category_everywhere_is_explained() -> None:
    rows = [(f"i{i}", r, "ok", "human") for i in range(5) for r in ("x", "y", "z")]
    rep = agreement_report(_set(rows), None, FAST)
    assert rep["percent_agreement"] == 1.0
    assert rep["fleiss_kappa"]["value"] is None and "chance agreement is 1" in rep["fleiss_kappa"]["note"]
    assert rep["krippendorff_alpha"]["nominal"]["value"] is None
    assert rep["pairwise_cohen_kappa"][0]["kappa"] is None and "note" in rep["pairwise_cohen_kappa"][0]


def test_single_rating_items_are_counted() -> None:
    rows = [("a", "x", "ok", "human"), ("a", "y", "bad", "human"), ("b", "x", "ok", "human")]
    rows += [("c", "x", "bad", "human"), ("c", "y", "bad", "human")]
    rep = agreement_report(_set(rows), None, FAST)
    assert rep["fleiss_kappa"]["n_items_used"] == 2
    assert "1 item(s) with fewer than 2 ratings excluded" in rep["fleiss_kappa"]["handling"]
    assert any("single rating" in n for n in rep["notes"])


def test_unequal_ratings_per_item_say_how() -> None:
    rows = [("a", "x", "ok", "human"), ("a", "y", "bad", "human"), ("a", "z", "ok", "human")]
    rows += [("b", "x", "ok", "human"), ("b", "y", "ok", "human")]
    rep = agreement_report(_set(rows), None, FAST)
    assert "2 to 3 ratings" in rep["fleiss_kappa"]["handling"]


def test_unknown_label_against_order() -> None:
    rows = [("a", "x", "ok", "human"), ("a", "y", "maybe", "human")]
    with pytest.raises(DataError) as err:
        agreement_report(_set(rows), ["ok", "bad"], FAST)
    assert (err.value.line, err.value.field) == (2, "label")
    assert "maybe" in str(err.value)


def test_same_seed_same_report() -> None:
    a = agreement_report(_random(), None, FAST)
    b = agreement_report(_random(), None, FAST)
    assert a == b
