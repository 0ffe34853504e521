"""The verdict columns the metrics and the reliability table share: cases numbered by first appearance, status
and choice codes (unknown ones kept apart, a missing choice is no choice), correctness of None as wrong."""

from __future__ import annotations

from typing import Any

import numpy as np

from tailorbench.evaluate.columns import CHOICE_CODES, STATUS_CODES, columns
from tailorbench.evaluate.metrics import case_scores
from tailorbench.evaluate.reliability import verdicts


def _row(case: str, status: str, choice: str | None, correct: bool | None, order: str = "AB", **extra: Any
         ) -> dict[str, Any]:
    row = {"case_id": case, "split": "s", "tier": "t", "user_id": "u", "status": status, "correct": correct,
           "len_chosen": 10, "len_rejected": 5, "order": order, **extra}
    if choice is not None or status == "ok":
        row["choice"] = choice
    return row


def test_columns_codes_and_order() -> None:
    rows = [_row("b", "ok", "A", True), _row("a", "invalid", None, None), _row("b", "ok", "B", False, "BA"),
            _row("c", "strange", "A", True), _row("a", "failed", None, False)]
    c = columns(rows)
    assert c.case.tolist() == [0, 1, 0, 2, 1] and c.firsts.tolist() == [0, 1, 3]
    assert c.status.tolist() == [STATUS_CODES["ok"], STATUS_CODES["invalid"], STATUS_CODES["ok"], -1,
                                 STATUS_CODES["failed"]]
    assert c.choice.tolist() == [CHOICE_CODES["A"], 0, CHOICE_CODES["B"], CHOICE_CODES["A"], 0]
    assert c.correct.tolist() == [True, False, False, True, False]
    assert c.per_case("split").tolist() == ["s", "s", "s"] and c.per_case("split") is c.per_case("split")
    # both readers give the same figures from shared and from fresh columns
    shared = case_scores(rows, c)
    fresh = case_scores(rows)
    assert shared.ids == fresh.ids == ["b", "a", "c"]
    assert np.array_equal(shared.score, fresh.score) and np.array_equal(shared.statuses, fresh.statuses)
    assert shared.statuses.tolist() == [[0, 0, 0], [1, 0, 1], [0, 0, 0]]  # invalid, abstain, failed
    v = verdicts(rows, None, c)
    assert v.valid.tolist() == [True, False, True, False, False]  # an unknown status is not a valid verdict
    assert v.first.tolist() == [True, False, False, False, False]
