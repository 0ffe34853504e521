"""Python twins of the `tailor stages ...` verbs (the CLI is a thin layer over these)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.stages.relevance import DEFAULT_MIN_SHARED, relevance_report
from tailorbench.stages.shapes import read_relevance


def relevance(
    human: Sequence[str | Path],
    model: Sequence[str | Path] = (),
    min_shared: int = DEFAULT_MIN_SHARED,
    n_resamples: int = 1000,
    seed: int = 0,
    report_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Stage 2 from Re-Centering files: human task-3 files and model vote files -> the relevance report."""
    ratings, alignment = read_relevance(human, model)
    report = relevance_report(ratings, alignment, min_shared=min_shared, n_resamples=n_resamples, seed=seed)
    if report_dir is not None:
        from tailorbench.stages.report import write_stage_report

        write_stage_report("relevance", report, Path(report_dir))
    return report
