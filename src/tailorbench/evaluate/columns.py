"""A run's verdict lines as columns, read once: the metrics (`metrics.case_scores`) and the reliability table
(`reliability.verdicts`) both fold the same 2 x cases rows, and reading a field of every row is what costs
(each row is a large dict). Every field comes out with one C-level pass (`map` over `itemgetter`) and is turned
into numbers before any comparison (perf/eval_overhead.py measures it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np

#: a verdict's status as a number (-1: any other)
STATUS_CODES: Mapping[str, int] = {"ok": 0, "invalid": 1, "abstain": 2, "failed": 3}
#: a verdict's choice as a number (no choice, or anything else: 0)
CHOICE_CODES: Mapping[Any, int] = {"A": 1, "B": 2}


@dataclass
class Columns:
    """Per verdict line: its case (cases numbered in order of their first line), status and choice codes,
    correctness and answer lengths; per case: the row of its first line."""

    rows: Sequence[Mapping[str, Any]]
    case: np.ndarray  # int64
    firsts: np.ndarray  # int64, one per case
    status: np.ndarray  # int8: STATUS_CODES
    choice: np.ndarray  # int8: CHOICE_CODES
    correct: np.ndarray  # bool
    len_chosen: np.ndarray  # int64
    len_rejected: np.ndarray  # int64
    _per_case: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def n_cases(self) -> int:
        return len(self.firsts)

    def per_case(self, key: str) -> np.ndarray:
        """Field `key` of each case's first line, as an object array (read once)."""
        if key not in self._per_case:
            self._per_case[key] = np.array([self.rows[k][key] for k in self.firsts], dtype=object)
        return self._per_case[key]


def columns(predictions: Sequence[Mapping[str, Any]]) -> Columns:
    n = len(predictions)

    def column(key: str) -> list[Any]:
        return list(map(itemgetter(key), predictions))

    ids = column("case_id")
    index = {case_id: k for k, case_id in enumerate(dict.fromkeys(ids))}
    case = np.fromiter(map(index.__getitem__, ids), np.int64, n)
    firsts = np.unique(case, return_index=True)[1]  # case numbers follow first appearance
    try:
        choices = column("choice")
    except KeyError:  # lines written without a `choice` (an invalid verdict's may lack it)
        choices = list(map(methodcaller("get", "choice"), predictions))
    return Columns(
        rows=predictions, case=case, firsts=firsts.astype(np.int64),
        status=np.fromiter(map(STATUS_CODES.get, column("status"), repeat(-1)), np.int8, n),
        choice=np.fromiter(map(CHOICE_CODES.get, choices, repeat(0)), np.int8, n),
        correct=np.array(column("correct"), dtype=bool),
        len_chosen=np.array(column("len_chosen"), dtype=np.int64).reshape(n),
        len_rejected=np.array(column("len_rejected"), dtype=np.int64).reshape(n),
    )
