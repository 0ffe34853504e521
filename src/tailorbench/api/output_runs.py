"""The typed results of runs: results.json of each run kind (`EvalResult` is the run log's `EvalResults`, read
strictly), a suite's leaderboard.json (`SuiteResult`, the run log's `Leaderboard`) and `tailor compare`'s paired
figures. Nested blocks stay objects: their keys are the benchmark's own split and tier names."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import ConfigDict

from tailorbench.api.output_base import Output, RunOutput
from tailorbench.runlog import Cell, EvalResults, Leaderboard


class EvalResult(RunOutput, EvalResults):
    """results.json of a `tailor eval` run: the run log's `EvalResults` (every field typed, no other key), knowing
    its run directory."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @classmethod
    def from_run(cls, run_dir: str | Path) -> EvalResult:
        """The results of a run directory (recomputed from its predictions when results.json is stale)."""
        from tailorbench.evaluate.results import load_results

        return cls.model_validate(load_results(Path(run_dir))).located(run_dir)

    @property
    def overall(self) -> Cell | None:
        """The cell of every judged case (`metrics.all`; None before any verdict)."""
        return cast("Cell | None", self.metrics.get("all"))

    @property
    def accuracy(self) -> float | None:
        """Accuracy on every judged case (`metrics.all.accuracy`)."""
        return None if self.overall is None else self.overall["accuracy"]

    @property
    def n(self) -> int:
        """Cases in the accuracy (`metrics.all.n`)."""
        return 0 if self.overall is None else self.overall["n"]


class CompareResult(Output):
    """`tailor compare --json`: paired bootstrap of the score difference A - B on the shared cases, overall
    (the top-level fields), per split x tier (`cells`) and for every run against the first (`comparisons`)."""

    a: str
    b: str
    n: int
    difference: float | None = None
    ci: list[float | None] = [None, None]
    p_two_sided: float | None = None
    ci_users: list[float] | None = None
    mcnemar: dict[str, Any] = {}
    cells: list[dict[str, Any]] = []
    comparisons: list[dict[str, Any]] = []
    #: the lines `tailor compare` prints first: which differences are significant after Holm's correction
    headline: list[str] = []




class GenEvalResult(RunOutput):
    """results.json of a `tailor gen-eval` run."""

    model: str
    reference: str
    judge: str
    metrics: dict[str, Any] = {}
    #: the judge's flip rate, P(first shown), P(longer) and non-verdict shares (docs/generation.md)
    reliability: dict[str, Any] = {}
    #: when the judge's model wrote one side: how often it picks its own answers (None otherwise)
    self_preference: dict[str, Any] | None = None

    @classmethod
    def from_run(cls, run_dir: str | Path) -> GenEvalResult:
        """The results of a gen-eval run directory."""
        from tailorbench.geneval.results import load_results

        return cls.model_validate(load_results(Path(run_dir))).located(run_dir)


class BenchmarkRunResult(RunOutput):
    """results.json of a run scored by its benchmark's own rule (`tailorbench.benchmarks`): `overall`, then the
    same cell per split and per tier (PrefEval: per form and per filler-turn count)."""

    kind: str
    model: str
    data: str | None = None
    overall: dict[str, Any] = {}
    by_split: dict[str, Any] = {}
    by_tier: dict[str, Any] = {}
    first_errors: list[Any] = []

    @classmethod
    def from_run(cls: type[B], run_dir: str | Path) -> B:
        """The results of a run directory of this kind (recomputed from its predictions when missing)."""
        from tailorbench.run_kinds import RUN_KINDS

        kind = str(cls.model_fields["kind"].default)
        results = {k: v for k, v in RUN_KINDS.get(kind).load_results(Path(run_dir)).items() if k != "run"}
        return cls.model_validate(results).located(run_dir)

    @property
    def n(self) -> int:
        """Items in the run (`overall.n`)."""
        return int(self.overall.get("n", 0))


B = TypeVar("B", bound=BenchmarkRunResult)


class ChoiceResult(BenchmarkRunResult):
    """results.json of a multiple-choice run (`tailor eval` on PrefEval's classification task or PersonaMem):
    accuracy of the model's picks with bootstrap CIs, failed and invalid answers counted apart."""

    kind: str = "multiple-choice"
    benchmark: str = ""
    by_split_tier: dict[str, Any] = {}

    @property
    def judge(self) -> str:
        """The `llm:` judge spec whose model answered (what `tailor eval --judge` was given)."""
        return f"llm:{self.model}"

    @property
    def accuracy(self) -> float | None:
        """Accuracy over the answered items (`overall.accuracy`)."""
        value = self.overall.get("accuracy")
        return None if value is None else float(value)


class PrefEvalGenerationResult(BenchmarkRunResult):
    """results.json of PrefEval's generation task (`tailor gen-eval` on PrefEval): the four checks' error types
    and the preference-following accuracy, overall, per form and per filler-turn count."""

    kind: str = "prefeval-generation"
    judge: str = ""

    @property
    def accuracy(self) -> float | None:
        """Preference-following accuracy (`overall.preference_following_accuracy`)."""
        value = self.overall.get("preference_following_accuracy")
        return None if value is None or not self.overall.get("total") else float(value)


class SuiteResult(Output, Leaderboard):
    """leaderboard.json of `tailor eval --suite`: the run log's `Leaderboard` (one row per judge x setting, a cell
    per benchmark: accuracy, CI, n and the step's run directory; None where the judge cannot answer the task)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class StageReportsResult(RunOutput):
    """What `tailor report` returns of a directory of stage reports (`tailor stages ...`, a study's `report/`): its
    title, the stages it holds and its headline's sentences (threestage/headline.py)."""

    kind: str = "stage"
    dir: str
    title: str
    stages: list[str]
    headline: list[str]

    @property
    def judge(self) -> str:
        """No one judge: a folder of stage reports holds each stage's raters (`""`, as every reported run has one)."""
        return ""

    @property
    def accuracy(self) -> float | None:
        """No accuracy: the stages' figures are in `headline` and the stage reports."""
        return None


#: what `tailor report` returns per run, by the run's kind
ReportedRun = EvalResult | GenEvalResult | ChoiceResult | PrefEvalGenerationResult | StageReportsResult
