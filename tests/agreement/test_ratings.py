"""Readers of the long format and of run directories: errors name file, line and field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tailorbench.agreement.ratings import read_ratings
from tailorbench.agreement.runs import read_run_dir
from tailorbench.errors import DataError

Writer = Callable[[str, list[dict[str, Any]]], Path]


def test_jsonl_and_csv_read_the_same(write_jsonl: Writer, tmp_path: Path) -> None:
    rows = [
        {"item": "q1", "rater": "ann", "label": 2, "group": "human"},
        {"item": "q1", "rater": "bob", "label": 3, "group": "human"},
        {"item": "q2", "rater": "ann", "label": None, "group": "human"},
    ]
    j = read_ratings([write_jsonl("r.jsonl", rows)])
    csv_path = tmp_path / "r.csv"
    csv_path.write_text("item,rater,label,group\nq1,ann,2,human\nq1,bob,3,human\nq2,ann,,human\n")
    c = read_ratings([csv_path])
    assert [(r.item, r.rater, r.label) for r in j.ratings] == [(r.item, r.rater, r.label) for r in c.ratings]
    assert j.missing == c.missing == {"null label": 1}


def test_group_defaults_to_human(write_jsonl: Writer) -> None:
    rs = read_ratings([write_jsonl("r.jsonl", [{"item": "a", "rater": "x", "label": "ok"}])])
    assert rs.ratings[0].group == "human"


@pytest.mark.parametrize(
    ("rows", "line", "field"),
    [
        ([{"item": "a", "rater": "x"}], 1, "label"),
        ([{"item": "a", "rater": "x", "label": 1}, {"rater": "y", "label": 1}], 2, "item"),
        ([{"item": "a", "rater": "x", "label": 1}, {"item": "a", "rater": "x", "label": 2}], 2, "rater"),
        ([{"item": "a", "rater": "x", "label": [1]}], 1, "label"),
        ([{"item": "a", "rater": "x", "label": 1}, {"item": "b", "rater": "x", "label": "1"}], 2, "label"),
        ([{"item": "a", "rater": "x", "label": True}, {"item": "b", "rater": "x", "label": 1}], 2, "label"),
    ],
)
def test_bad_rows_name_line_and_field(write_jsonl: Writer, rows: list[dict[str, Any]], line: int, field: str) -> None:
    path = write_jsonl("bad.jsonl", rows)
    with pytest.raises(DataError) as err:
        read_ratings([path])
    assert (err.value.line, err.value.field) == (line, field)
    assert str(path) in str(err.value)


def test_broken_json_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"item": "a", "rater": "x", "label": 1}\n{oops\n')
    with pytest.raises(DataError, match=r"r\.jsonl:2"):
        read_ratings([path])


def _pred(case: str, judge: str, order: str, choice: str | None, status: str = "ok") -> dict[str, Any]:
    return {"case_id": case, "judge": judge, "setting": "persona", "order": order, "choice": choice, "status": status}


def test_run_dir_reads_labels_through_the_order(write_jsonl: Writer, tmp_path: Path) -> None:
    write_jsonl(
        "run/predictions.jsonl",
        [
            _pred("c1", "j", "AB", "A"),  # chosen shown as A, picked A -> chosen
            _pred("c1", "j", "BA", "A"),  # chosen shown as B, picked A -> rejected
            _pred("c2", "j", "AB", "B"),
            _pred("c2", "j", "BA", None, "invalid"),
            _pred("c3", "j", "AB", None, "failed"),
        ],
    )
    rs = read_run_dir(tmp_path / "run")
    got = {(r.item, r.rater): r.label for r in rs.ratings}
    assert got == {
        ("c1", "j@persona/AB"): "chosen",
        ("c1", "j@persona/BA"): "rejected",
        ("c2", "j@persona/AB"): "rejected",
    }
    assert all(r.group == "model" for r in rs.ratings)
    assert rs.missing == {"verdict invalid": 1, "verdict failed": 1}


def test_run_dir_one_order_has_plain_rater_and_errors(write_jsonl: Writer, tmp_path: Path) -> None:
    write_jsonl("run/predictions.jsonl", [_pred("c1", "j", "AB", "B")])
    assert read_run_dir(tmp_path / "run").ratings[0].rater == "j@persona"
    write_jsonl("bad/predictions.jsonl", [_pred("c1", "j", "XY", "B")])
    with pytest.raises(DataError) as err:
        read_run_dir(tmp_path / "bad")
    assert (err.value.line, err.value.field) == (1, "order")
    with pytest.raises(DataError, match=r"predictions\.jsonl"):
        read_run_dir(tmp_path)


@pytest.mark.parametrize("group", ["humans", "Human", "judge", "0"])
def test_group_outside_the_documented_ones_is_an_error(write_jsonl: Writer, group: str) -> None:
    """Found by the CLI fuzz walk: a mistyped group was dropped silently by `tailor tiers` (exit 0 at 97f6c24)."""
    path = write_jsonl("r.jsonl", [{"item": "a", "rater": "x", "label": "ok", "group": "human"},
                                   {"item": "a", "rater": "y", "label": "ok", "group": group}])
    with pytest.raises(DataError) as err:
        read_ratings([path])
    assert (err.value.line, err.value.field) == (2, "group")
    assert "r.jsonl" in str(err.value)
