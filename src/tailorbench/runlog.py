"""The run log's format: the models our own run files are written from and read back through, and its version.

manifest.json (`schema.RunManifest`), each predictions line (`schema.Prediction`), results.json (`EvalResults`) and
a suite's leaderboard.json (`Leaderboard`) are `RunFile`s: written from the model (`RunFile.to_file`) and read
strictly (`read_run_file`: no key the model does not declare, no value of another type, no bool for a number).
Every such file holds `format_version`, `FORMAT_VERSION` when this version wrote it. A file without one is format 1
(written before the version was recorded): it is read as the current format when adding the version is all it
takes (it then validates), and refused otherwise, naming the file and the tailorbench that wrote it
(docs/data.md, "Run files: the format and its version").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    with_config,
)
from typing_extensions import NotRequired, TypedDict

from tailorbench.errors import DataError

#: the run log's format: 2 added `format_version` to every file and reads our own files strictly; 1 is every
#: file without the field
FORMAT_VERSION = 2
#: what a file without `format_version` is
FIRST_VERSION = 1

M = TypeVar("M", bound="RunFile")
#: a typed dict of the run log: no key it does not declare (strict types come from the file's model)
_strict = with_config(ConfigDict(extra="forbid"))


class RunFile(BaseModel):
    """Base of every file of the run log: strict types, no undeclared key, the format's version first; the
    optional blocks the writer leaves out rather than writing null (`omitted_when_none`) are left out when dumped.
    Nested blocks are typed dicts (`TypedDict`, no undeclared key either): read as the objects they are."""

    model_config = ConfigDict(extra="forbid", strict=True)

    #: optional fields a file leaves out (rather than writing null) when they are None
    omitted_when_none: ClassVar[tuple[str, ...]] = ()

    format_version: int = FORMAT_VERSION

    @model_serializer(mode="wrap")
    def _leave_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.omitted_when_none:
            if data.get(name, 0) is None:
                del data[name]
        return data

    def to_file(self) -> dict[str, Any]:
        """The object written to the file: `format_version` first, then every field in the model's order (an
        optional block the model says is left out when None is left out)."""
        return {"format_version": self.format_version, **self.model_dump(exclude={"format_version"})}


def read_run_file(model: type[M], path: Path, data: Mapping[str, Any], *, line: int | None = None,
                  what: str = "run file", written_by: str | None = None, rerun: str = "run it again") -> M:
    """`data` (the object read from `path`, or its line `line`) as `model`, strictly: every field present (the
    writer writes defaults too; only `omitted_when_none` blocks may be absent), no other, each of its type; a
    DataError naming the file, the line and the field otherwise. A format-1 object (no `format_version`) is read
    with the version added when it then validates; when it does not, the error says which tailorbench wrote it
    (`written_by`, when known) and what to do (`rerun`). A version this tailorbench does not know is refused."""
    version = data.get("format_version", FIRST_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < FIRST_VERSION:
        raise DataError(path, line, "format_version", f"expected a format version (an integer from {FIRST_VERSION}"
                        f"), got {version!r}: not a {what} as tailorbench writes it")
    if version > FORMAT_VERSION:
        raise DataError(path, line, "format_version", f"this {what} has run format {version}, newer than this "
                        f"tailorbench reads (up to {FORMAT_VERSION}): upgrade tailorbench to read it")
    try:
        absent = [name for name in model.model_fields
                  if name not in data and name != "format_version" and name not in model.omitted_when_none]
        if absent:  # every field is written, defaults included: a file without one was not written whole
            raise ValidationError.from_exception_data(model.__name__, [
                {"type": "missing", "loc": (absent[0],), "input": dict(data)}])
        return model.model_validate({**data, "format_version": FORMAT_VERSION}, strict=True)
    except ValidationError as exc:
        first = _meant(exc.errors())
        where = ".".join(str(p) for p in first["loc"] if not _union_member(p)) or None
        got = f", got {first['input']!r}" if first["type"] not in ("missing", "extra_forbidden") else ""
        if version == FORMAT_VERSION:
            raise DataError(path, line, where, f"{first['msg']}{got}: not a {what} as tailorbench writes it"
                            ) from None
        by = f"tailorbench {written_by}" if written_by else "a tailorbench older than run format 2"
        raise DataError(path, line, where, f"{first['msg']}{got}: this run was written by {by} (run format "
                        f"{version}; this version reads format {FORMAT_VERSION}); {rerun}") from None


# -- results.json's blocks (evaluate/metrics.py, reliability.py, results.py compute them): typed dicts, so a
# caller reads them as the objects they are, validated as strictly as the file (no other key, each of its type) --


@_strict
class Count(TypedDict):
    """Cases and their accuracy (None without cases)."""

    n: int
    accuracy: float | None


@_strict
class LengthView(TypedDict):
    chosen_longer: Count
    chosen_shorter: Count
    equal_length: int
    balanced_accuracy: float | None


@_strict
class OverlapCount(TypedDict):
    n: int
    accuracy: float | None
    chosen_longer: float | None


@_strict
class Cell(TypedDict):
    """Every figure of one cell of `metrics` (a split x tier, a split, or everything)."""

    n: int
    accuracy: float | None
    correct: float
    ci: list[float | None]
    invalid: int
    abstained: int
    failed: int
    strict_accuracy: float | None
    consistency: float | None
    n_consistency: int
    length: LengthView
    #: unique / repeated / contradicted by another tier (a split x tier cell of data with tier overlap)
    by_overlap: NotRequired[dict[str, OverlapCount]]


@_strict
class HardUser(TypedDict):
    user_id: str
    n: int
    accuracy: float


@_strict
class Users(TypedDict):
    n_users: int
    quantiles: dict[str, float]
    min_cases_for_hardest: int
    hardest: list[HardUser]


@_strict
class LengthBin(TypedDict):
    bin: str
    lo: float
    hi: float | None
    n: int
    accuracy: float | None


@_strict
class VerdictCounts(TypedDict):
    total: int
    cached: int
    truncated: int


@_strict
class UsageTotals(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    #: batch mode: the provider batches and what they cost (models/batch_state.py)
    batch: NotRequired[dict[str, Any]]


@_strict
class Failures(TypedDict):
    failed: int
    verdicts: int
    share: float | None
    max_failed: float
    exceeded: bool
    by_kind: dict[str, int]
    first_errors: list[str]
    requests: int | None
    retries: int
    call_errors: dict[str, int]


@_strict
class Provenance(TypedDict):
    name: str
    layout: str | None
    fingerprint: str | None
    rows: int | None
    labels: str
    labels_note: str


@_strict
class Example(TypedDict):
    case_id: str
    split: str | None
    tier: str | None
    order: str
    choice: str | None
    status: str | None
    scores: dict[str, float] | None
    raw: str | None
    error: str | None
    len_chosen: int | None
    len_rejected: int | None
    #: in-training / persona-seen / unseen, for a judge that declared its training data
    training: NotRequired[str]
    #: the case's persona, question, chosen and rejected answers, each cut to 300 characters (when readable)
    texts: NotRequired[dict[str, str]]


@_strict
class Share(TypedDict):
    value: float | None
    ci: list[float | None]
    n: int


@_strict
class Position(TypedDict):
    flip_rate: float | None
    pairs: int
    p_first: Share


@_strict
class Calibration(TypedDict):
    ece: float
    ece_ci: list[float]
    brier: float
    n: int
    bins: list[dict[str, float | int]]


@_strict
class ReliabilityCell(TypedDict):
    """The reliability figures of one cell (docs/metrics.md, "Reliability")."""

    cases: int
    verdicts: int
    position: Position
    #: `p_longer` (a Share), `longer_is_right` and `shorter_is_right` (Counts)
    length: dict[str, Share | Count]
    shares: dict[str, float | None]
    calibration: Calibration | None


@_strict
class Reliability(TypedDict):
    probability: str | None
    probability_rule: str | None
    cells: dict[str, ReliabilityCell | dict[str, ReliabilityCell]]


def _meant(errors: list[Any]) -> Any:
    """The error to report: where every member of a union failed (a `metrics` entry is a cell or a split's
    cells), the first error of the member that failed least, the one the file meant."""
    branches: dict[tuple[str | int, ...], list[Any]] = {}
    for error in errors:
        branches.setdefault(tuple(p for p in error["loc"] if _union_member(p)), []).append(error)
    return min(branches.values(), key=len)[0]


def _union_member(part: str | int) -> bool:
    """Whether a part of a validation error's location names the member of a union pydantic tried (`Cell`,
    `dict[str,Cell]`), not a key of the file."""
    return isinstance(part, str) and ("[" in part or isinstance(globals().get(part), type))


class EvalResults(RunFile):
    """results.json of a `tailor eval` run: what `evaluate.results.compute_results` computes from the manifest and
    the predictions (docs/metrics.md has the blocks). Nested blocks stay objects: their keys are the benchmark's
    own split and tier names."""

    omitted_when_none: ClassVar[tuple[str, ...]] = ("benchmark_names", "authors_report", "determinism",
                                                    "vs_longer")

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
    failures: Failures
    predictions_sha256: str | None = None
    dataset: Provenance
    #: the split and tier names the data declares, when they are not PersonaFeedback's
    benchmark_names: dict[str, list[str]] | None = None
    training_overlap: dict[str, Any] | None = None
    examples: dict[str, list[Example]] = {}
    #: `--orders authors`: the fields the benchmark authors' summary prints
    authors_report: dict[str, Any] | None = None
    #: split -> tier -> cell, each split's `all` and the overall `all` (keys: the benchmark's own names)
    metrics: dict[str, Cell | dict[str, Cell]] = {}
    users: Users
    #: attribute -> value -> cases and accuracy
    attributes: dict[str, dict[str, Count]] = {}
    by_length_ratio: list[LengthBin] = []
    verdicts: VerdictCounts
    usage: UsageTotals
    #: position, length, calibration and non-verdict shares per split x tier (docs/metrics.md, "Reliability")
    reliability: Reliability
    #: `tailor eval --repeat N`: verdict agreement and accuracy spread across repeats (docs/metrics.md)
    determinism: dict[str, Any] | None = None
    #: accuracy minus the `longer` baseline's, paired on the run's cases, with its bootstrap CI (the headline)
    vs_longer: dict[str, Any] | None = None


class Leaderboard(RunFile):
    """leaderboard.json of `tailor eval --suite`: one row per judge x setting, a cell per benchmark (accuracy, CI,
    n and the step's run directory; None where the judge cannot answer the benchmark's task)."""

    suite: str
    benchmarks: list[str] = []
    rows: dict[str, dict[str, dict[str, Any] | None]] = {}
    #: benchmark -> why it was left out (`--skip-missing`: its data is not there)
    missing: dict[str, str] = {}
    #: row -> benchmark -> why that judge has no figure there
    not_run: dict[str, dict[str, str]] = {}
    unit: str = "accuracy in percent [95% CI]"


@_strict
class SuiteBenchmarkSpec(TypedDict):
    name: str
    data: str
    task: str
    options: dict[str, Any]
    layout: str | None


@_strict
class SuiteSpec(TypedDict):
    """A suite as run (`benchmarks.suite.Suite`: the benchmarks resolved)."""

    name: str
    benchmarks: list[SuiteBenchmarkSpec]
    judges: list[str]
    settings: list[str]
    limit: int | None
    seed: int
    n_boot: int


class SuiteRecord(RunFile):
    """suite.json of a suite's directory: the suite it runs and `skip_missing`, so `tb.resume(DIR)` and `tailor
    eval --resume DIR` finish it."""

    kind: Literal["suite"] = "suite"
    suite: SuiteSpec
    skip_missing: bool = False

