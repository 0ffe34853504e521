"""The typed results of `tb.stages.*`: the stage reports (STAGE.json of a report directory) and what the other
stage verbs return."""

from __future__ import annotations

from typing import Any

from tailorbench.api.output_base import Output


class StageReport(Output):
    """A stage report as STAGE.json holds it; `notes` are its caveats, `missing_ratings` what did not line up."""

    n_items: int | None = None
    notes: list[str] = []
    missing_ratings: dict[str, Any] = {}
    bootstrap: dict[str, Any] = {}


class ExtractionReport(StageReport):
    """extraction.json: stage 1 (attribute judgments of extracted items, by extractor and source)."""

    n_attributes: int | None = None
    agreement: dict[str, Any] = {}


class RelevanceReport(StageReport):
    """relevance.json: stage 2 (pairwise and group kappas, human vs model votes)."""

    sources: Any = None
    raters: Any = None
    pairwise_kappa: Any = None
    group_kappa: Any = None
    f1_vs_human_majority: Any = None


class IncorporationReport(StageReport):
    """incorporation.json: stage 3 (5-point A/B ratings: judges' correlation with humans, by condition)."""

    n_tasks: int | None = None
    judges: Any = None
    correlation_with_humans: Any = None
    by_condition: Any = None


class TrainedHeadReport(StageReport):
    """verifier.json / relevance_classifier.json: a head trained on the human labels (`head` is its .npz)."""

    head: str | None = None
    threshold: Any = None
    fit: dict[str, Any] = {}


class StageOutput(Output):
    """What a stage verb that writes one file returns (`out`; model-calling verbs also count their `calls`: a
    number, with `failed` beside it, or one accounting per step)."""

    out: str | None = None
    calls: int | dict[str, Any] = {}


class StageExample(Output):
    """`tailor stages example`: every report of the bundled example study, as written under `out`."""

    out: str
    illustrative: bool = True
    calls: dict[str, Any] = {}
    extraction: ExtractionReport | None = None
    relevance: RelevanceReport | None = None
    incorporation: IncorporationReport | None = None
    verifier: TrainedHeadReport | None = None
    relevance_classifier: TrainedHeadReport | None = None


class StageSummary(Output):
    """`tailor stages summary DIR`: the stage reports found in DIR (summary.md/.html written beside them)."""

    extraction: ExtractionReport | None = None
    relevance: RelevanceReport | None = None
    incorporation: IncorporationReport | None = None
