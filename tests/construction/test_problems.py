"""`build_problems`: when `tailor build run` exits 3 (a stage produced nothing, a model stage gave up on items)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.construction.context import StageReport
from tailorbench.construction.pipeline import BuildSummary, build_problems


def _stage(name: str, items: int, ok: int, gave_up: int, errors: list[str] | None = None) -> StageReport:
    stats: dict[str, Any] = {"items": items, "ok": ok, "gave_up": gave_up}
    failures = [{"user_id": f"u{k}", "errors": ["first try", e]} for k, e in enumerate(errors or [])]
    return StageReport(name, "ran", "fp", ok, stats, failures)


def test_a_sound_build_has_no_problem() -> None:
    stages = [_stage("profile", 2, 2, 0), _stage("pairs", 6, 4, 2, ["identical answers"] * 2)]
    summary = BuildSummary(Path("out"), stages, None)
    assert build_problems(summary) == []  # identical answers are an outcome of the data, not a failed call


def test_given_up_items_against_max_failed() -> None:
    summary = BuildSummary(Path("out"), [_stage("profile", 4, 4, 0), _stage("answers", 12, 9, 3, ["bad json"] * 3)],
                           None)
    assert build_problems(summary) == [
        "stage answers: 3 of 12 items given up after every retry (25.0%, more than --max-failed 0%); "
        "first errors: bad json (x3)"]
    assert build_problems(summary, max_failed=0.25) == []


def test_the_first_stage_that_produced_nothing_is_named_once() -> None:
    summary = BuildSummary(Path("out"), [_stage("profile", 2, 0, 2, ["not valid JSON", "timeout"]),
                                         _stage("questions", 0, 0, 0), _stage("answers", 0, 0, 0)], None)
    assert build_problems(summary, max_failed=1.0) == [
        "stage profile produced nothing (2 items); first causes: not valid JSON | timeout"]
