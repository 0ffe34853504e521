"""Typed results of the Python API: pydantic models mirroring the JSON each verb writes or prints.

Every model keeps the file's fields exactly (`extra="allow"`: fields a model does not declare are kept, so
`model_dump(mode="json")` equals the file), and declares the ones a caller reads most, typed. Nested blocks stay
dicts: their keys are the benchmark's own split and tier names.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr


class Output(BaseModel):
    """Base of every result: the JSON object as typed attributes; `to_dict()` is the object itself."""

    model_config = ConfigDict(extra="allow")

    def to_dict(self) -> dict[str, Any]:
        """The object's fields as read or made (defaults of fields it lacked are not added)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> str:
        """The JSON text as the CLI's `--json` prints it."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)


R = TypeVar("R", bound="RunOutput")
OutputT = TypeVar("OutputT", bound=Output)
P = ParamSpec("P")


def returning(model: type[OutputT]) -> Callable[[Callable[P, Any]], Callable[P, OutputT]]:
    """A verb's function whose JSON object (a dict) is returned as `model`: the typed twin of a function the CLI
    prints from (same arguments, same docstring)."""

    def wrap(fn: Callable[P, Any]) -> Callable[P, OutputT]:
        @functools.wraps(fn)
        def typed(*args: P.args, **kwargs: P.kwargs) -> OutputT:
            return model.model_validate(fn(*args, **kwargs))

        return typed

    return wrap


class RunOutput(Output):
    """results.json of a run directory; `run_dir` is where it lies (not a field of the file)."""

    _run_dir: Path | None = PrivateAttr(default=None)

    @property
    def run_dir(self) -> Path | None:
        return self._run_dir

    def located(self: R, run_dir: str | Path | None) -> R:
        """The same result, knowing its run directory."""
        self._run_dir = None if run_dir is None else Path(run_dir)
        return self


class EvalResult(RunOutput):
    """results.json of a `tailor eval` run."""

    judge: str
    setting: str
    data: str | None = None
    dataset_fingerprint: str | None = None
    orders: str | None = None
    ci_unit: str = "case"
    n_boot: int = 1000
    status: str = "finished"
    error: str | None = None
    cases_planned: int = 0
    cases_judged: int = 0
    skipped_rows: int = 0
    warnings: list[str] = []
    failures: dict[str, Any] = {}
    predictions_sha256: str | None = None
    dataset: dict[str, Any] = {}
    training_overlap: dict[str, Any] | None = None
    examples: Any = None
    metrics: dict[str, Any] = {}
    #: position, length, calibration and non-verdict shares per split x tier (docs/metrics.md, "Reliability")
    reliability: dict[str, Any] = {}
    #: `tailor eval --repeat N`: verdict agreement and accuracy spread across repeats (docs/metrics.md)
    determinism: dict[str, Any] | None = None

    @classmethod
    def from_run(cls, run_dir: str | Path) -> EvalResult:
        """The results of a run directory (recomputed from its predictions when results.json is stale)."""
        from tailorbench.evaluate.results import load_results

        return cls.model_validate(load_results(Path(run_dir))).located(run_dir)

    @property
    def accuracy(self) -> float | None:
        """Accuracy on every judged case (`metrics.all.accuracy`)."""
        value = self.metrics.get("all", {}).get("accuracy")
        return None if value is None else float(value)

    @property
    def n(self) -> int:
        """Cases in the accuracy (`metrics.all.n`)."""
        return int(self.metrics.get("all", {}).get("n", 0))


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


class AgreeResult(Output):
    """`tailor agree --json` (and `--out FILE`): agreement statistics of a rating set."""

    sources: Any = None
    categories: list[Any] = []
    scale: str | None = None
    n_items: int = 0
    n_raters: int = 0
    n_ratings: int = 0
    percent_agreement: float | None = None
    fleiss_kappa: dict[str, Any] = {}
    krippendorff_alpha: dict[str, Any] = {}
    missing_ratings: dict[str, Any] = {}
    pairwise_cohen_kappa: Any = None
    groups: dict[str, Any] = {}
    #: each judge's alt-test and kappas beside the humans' (docs/metrics.md, "Human admissibility"); empty
    #: (and absent from the JSON) when the ratings hold no judge beside humans
    admissibility: dict[str, Any] = {}
    bootstrap: dict[str, Any] = {}
    notes: list[str] = []


class TiersResult(Output):
    """`tailor tiers --json`: the summary of a tiered benchmark (`out` is the PairCase JSONL written)."""

    n_items: int
    n_cases: int
    rule: dict[str, Any] = {}
    tiers: dict[str, Any] = {}
    skipped_items: dict[str, int] = {}
    ratings_for_unknown_items: int = 0
    out: str | None = None


class EstimateResult(Output):
    """`tailor estimate --json` (and `--out FILE`): human-only, proxy-only and human-anchored estimates per cell
    (`estimate.records.EstimateReport`, docs/metrics.md, "Human-anchored estimates")."""

    format_version: int = 1
    kind: str = "pairwise"
    estimand: str = ""
    design: str = "uniform"
    assumed_uniform: bool = False
    level: float = 0.95
    n_items: int = 0
    n_labels: int = 0
    cells: list[dict[str, Any]] = []
    notes: list[str] = []


class EstimateSampleResult(Output):
    """`tailor estimate sample --json`: the sampling plan written (`out`, an annotation import)."""

    format_version: int = 1
    out: str = ""
    sampling: str = "stratified"
    items: int = 0
    sampled: int = 0
    strata: dict[str, int] = {}
    notes: list[str] = []


class EstimatePlanResult(Output):
    """`tailor estimate plan --json` (and `--out FILE`): human labels needed for a wanted half-width."""

    format_version: int = 1
    half_width: float = 0.0
    level: float = 0.95
    items: int = 0
    rows: list[dict[str, Any]] = []
    notes: list[str] = []


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


class SuiteResult(Output):
    """leaderboard.json of `tailor eval --suite`: one row per judge x setting, a cell per benchmark (accuracy, CI,
    n and the step's run directory; None where the judge cannot answer the benchmark's task)."""

    suite: str
    benchmarks: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    #: benchmark -> why it was left out (`--skip-missing`: its data is not there)
    missing: dict[str, str] = {}
    #: row -> benchmark -> why that judge has no figure there
    not_run: dict[str, dict[str, str]] = {}


#: what `tailor report` returns per run, by the run's kind
ReportedRun = EvalResult | GenEvalResult | ChoiceResult | PrefEvalGenerationResult


class TrainResult(Output):
    """summary.json of `tailor train-rm` (the checkpoint at `out` is the judge `rm:OUT`)."""

    out: str
    model: str | None = None
    steps: int = 0
    pairs_seen: int = 0
    pairs_per_s: float | None = None
    wall_seconds: float | None = None
    data: dict[str, Any] = {}
    evals: list[dict[str, Any]] = []
    notes: list[str] = []
    feature_fit: dict[str, Any] | None = None

    @property
    def judge(self) -> str:
        """The judge spec of the trained checkpoint."""
        return f"rm:{self.out}"


class BuildResult(Output):
    """`tailor build run --json`: what each stage of the construction pipeline did; `problems` (not a field of
    the JSON) says why the build counts as failed (exit code 3), empty when it is sound."""

    out: str
    stages: list[dict[str, Any]] = []
    model: dict[str, Any] | None = None
    _problems: list[str] = PrivateAttr(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return self._problems

    def with_problems(self, problems: list[str]) -> BuildResult:
        self._problems = list(problems)
        return self


class DataCheck(Output):
    """`tailor data check --json`: the integrity report of a benchmark."""

    layout: str
    skipped: list[dict[str, Any]] = []


class DataConverted(Output):
    """`tailor data convert --json`: the native JSONL written and its case count."""

    out: str
    cases: int


class DataPushed(Output):
    """`tailor data push --json`: what was (or, with --dry-run, would be) uploaded."""

    repo: str
    rows: int


class CacheStats(Output):
    """`tailor cache stats --json`: entries and size of the call cache."""

    path: str
    exists: bool


class CacheCleared(Output):
    """`tailor cache clear --json`: how many cached calls were deleted."""

    removed: int


class BatchStatus(Output):
    """`tailor batch status RUN --json`: the provider batches recorded in a run directory (one row per batch:
    model, provider, batch_id, status, requests, cost_usd / sync_cost_usd once ended, live_status / live_counts
    / live_error as the provider reports them now), counted by recorded status."""

    run_dir: str
    batches: list[dict[str, Any]] = []
    by_status: dict[str, int] = {}
    requests: int = 0
    #: batches recorded as submitted (or being submitted) and not seen to end
    open: int = 0
    cost_usd: float | None = None
    sync_cost_usd: float | None = None
    resume_command: str | None = None


class BatchesCancelled(Output):
    """`tailor batch cancel RUN --json`: the batches a cancel was sent for (`cancel_error` where it failed)."""

    run_dir: str
    cancelled: list[dict[str, Any]] = []
    failed: int = 0
    resume_command: str | None = None


# -- tb.stages.*: the stage reports (STAGE.json of a report directory) and what the other stage verbs return ----


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


# -- tb.annotate.*: the objects the annotation verbs print ----------------------------------------------------


class ProjectCreated(Output):
    """`tailor annotate project create`."""

    project: str
    id: int
    task_type: str
    n_per_item: int


class ProjectProgress(Output):
    """`tailor annotate progress` (and each row of `project list`): labels needed and done, per annotator;
    `flagged` and `agreement` when asked for."""

    project: str
    task_type: str
    n_per_item: int
    items: int
    gold_items: int
    labels_needed: int
    labels_done: int
    items_complete: int
    percent_done: float
    annotators: list[dict[str, Any]] = []
    flagged: list[dict[str, Any]] | None = None
    agreement: dict[str, Any] | None = None
    #: per annotator: median time per item, kappa against the others' majority, agreement with gold (quality.py)
    quality: dict[str, dict[str, Any]] | None = None


class ItemsImported(Output):
    """`tailor annotate import`: items and gold items stored (all or nothing)."""

    project: str
    format: str
    items: int
    gold_items: int


class Annotator(Output):
    """`tailor annotate annotator add|link|list|deactivate|activate`: `login_link` is shown once, when it is made;
    it logs in once, until `link_expires_at` (`link_used_at`: when it did). `released`: the unfinished
    assignments a deactivation gave back to the queue."""

    name: str
    id: int | None = None
    role: str | None = None
    active: bool | None = None
    projects: list[str] = []
    login_link: str | None = None
    link_expires_at: str | None = None
    link_used_at: str | None = None
    released: int | None = None


class Membership(Output):
    """`tailor annotate annotator join`."""

    name: str
    project: str


class Released(Output):
    """`tailor annotate release`: unfinished assignments put back in the queue."""

    project: str
    released: int


class AnnotationExport(Output):
    """`tailor annotate export`: the files written (long-format ratings; a tiered benchmark for pairwise)."""

    files: Any = None
    exported_at: str | None = None


class LabelsImported(Output):
    """`tailor annotate import-labels`: an annotation tool's export read into the long format (`out`), with what
    was not a rating counted by reason (`not_rated`) and every unmappable row (`unmappable`: path, line, reason)."""

    tool: str
    out: str | None = None
    ratings: int = 0
    not_rated: dict[str, int] = {}
    unmappable: list[dict[str, Any]] = []


class CrowdStudy(Output):
    """`tailor annotate crowd create|list|close`: a project opened to a crowd platform (Prolific by default).
    `link`: the study URL to give the platform, with its placeholders (when the study is made, and from
    `crowd link`); `participants` counts them by status (active, finished, screened_out, timed_out, returned,
    no_items); `state`: what the link does now (open, closed, full, items exhausted); `items_left`: regular
    items that can still take an annotator."""

    id: int
    project: str | None = None
    open: bool | None = None
    quota: int | None = None
    max_participants: int | None = None
    time_limit_min: int | None = None
    completion_url: str | None = None
    completion_code: str | None = None
    screenout_code: str | None = None
    screenout_gold_below: float | None = None
    screenout_after_gold: int | None = None
    params: list[str] = []
    consent: str | None = None
    participants: dict[str, int] = {}
    link: str | None = None
    state: str | None = None
    items_left: int | None = None
    #: whether `crowd link` can show the link again (False for studies made before links were kept)
    link_kept: bool | None = None


class StudyParticipant(Output):
    """`tailor annotate crowd participants STUDY`: one participant, by platform id: `status` (active, finished,
    screened_out, timed_out, returned, no_items), `items` done (gold included), `gold_items` and `gold_score`,
    `minutes` in the study, `median_seconds` per item (the server's timing) and the `code` they were given."""

    external_id: str
    status: str
    items: int
    gold_items: int
    gold_score: float | None = None
    minutes: float
    median_seconds: float | None = None
    code: str | None = None
    started_at: str


class StudyLink(Output):
    """`tailor annotate crowd link STUDY`: the study URL to give the platform, again."""

    id: int
    link: str


class StudyReleased(Output):
    """`tailor annotate crowd release`: participants taken out (past the time limit, or reported as returned)
    and their unfinished assignments put back in the queue."""

    id: int
    timed_out: int
    returned: int
    released: int


class ParticipantLink(Output):
    """`tailor annotate crowd reissue`: a participant's personal login link (shown once), for a lost cookie."""

    external_id: str
    study: int
    name: str
    status: str
    login_link: str


# -- tb.study.*: a whole human study from one config (humanstudy/) ------------------------------------------------


class HumanStudyInit(Output):
    """`tailor study init DIR`: the study directory with its study.yaml and the example's input files."""

    dir: str
    config: str
    files: list[str] = []


class HumanStudyPlan(Output):
    """`tailor study plan DIR`: every step (status, inputs, outputs, model calls, tokens, cost), the stale steps
    (done before with another config or input), the totals and the crowd cost per stage."""

    study: str
    steps: list[dict[str, Any]] = []
    stale: list[str] = []
    model_calls: int = 0
    model_calls_known: bool = True
    estimated_cost_usd: float | None = None
    crowd_cost: dict[str, Any] = {}


class HumanStudyRun(Output):
    """`tailor study run DIR`: the steps this run did, where it waits for people (stage, labels done / wanted,
    missing, the link) and whether the study is finished."""

    study: str
    dir: str
    ran: list[str] = []
    waiting: dict[str, Any] | None = None
    done: list[str] = []
    finished: bool = False


class HumanStudyStatus(Output):
    """`tailor study status DIR`: per stage the current step, labels done / wanted, each annotator's quality and
    the crowd study's open places."""

    study: str
    dir: str
    stages: dict[str, Any] = {}
    finished: bool = False


class HumanStudyReport(Output):
    """`tailor study report DIR`: the study report (study.json's figures per stage) and where it was written."""

    study: str
    out: str
    stages: dict[str, Any] = {}
