"""The typed results of the verbs that are not runs: agreement, tiers, estimates, training, the construction
pipeline, data checks and pushes, the call cache and provider batches (what each verb prints with `--json`)."""

from __future__ import annotations

from typing import Any

from pydantic import PrivateAttr

from tailorbench.api.output_base import Output


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
    #: with `--expert RATER`: each judge's single-expert alt-test (docs/metrics.md, "Single expert"); empty (and
    #: absent from the JSON) without it
    single_expert: dict[str, Any] = {}
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
