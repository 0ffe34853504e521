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
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from tailorbench.errors import DataError

#: the run log's format: 2 added `format_version` to every file and reads our own files strictly; 1 is every
#: file without the field
FORMAT_VERSION = 2
#: what a file without `format_version` is
FIRST_VERSION = 1

M = TypeVar("M", bound="RunFile")


class RunFile(BaseModel):
    """Base of every file of the run log: strict types, no undeclared key, the format's version first."""

    model_config = ConfigDict(extra="forbid", strict=True)

    format_version: int = FORMAT_VERSION
    #: optional fields a file leaves out (rather than writing null) when they are None
    omitted_when_none: ClassVar[tuple[str, ...]] = ()

    def to_file(self) -> dict[str, Any]:
        """The object written to the file: `format_version` first, then every field in the model's order (an
        optional block the model says is left out when None is left out)."""
        body = self.model_dump(exclude={"format_version"})
        for name in self.omitted_when_none:
            if body.get(name) is None:
                body.pop(name, None)
        return {"format_version": self.format_version, **body}


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
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        got = f", got {first['input']!r}" if first["type"] not in ("missing", "extra_forbidden") else ""
        if version == FORMAT_VERSION:
            raise DataError(path, line, where, f"{first['msg']}{got}: not a {what} as tailorbench writes it"
                            ) from None
        by = f"tailorbench {written_by}" if written_by else "a tailorbench older than run format 2"
        raise DataError(path, line, where, f"{first['msg']}{got}: this run was written by {by} (run format "
                        f"{version}; this version reads format {FORMAT_VERSION}); {rerun}") from None


class EvalResults(RunFile):
    """results.json of a `tailor eval` run: what `evaluate.results.compute_results` computes from the manifest and
    the predictions (docs/metrics.md has the blocks). Nested blocks stay objects: their keys are the benchmark's
    own split and tier names."""

    omitted_when_none: ClassVar[tuple[str, ...]] = ("benchmark_names", "authors_report", "determinism")

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
    #: the split and tier names the data declares, when they are not PersonaFeedback's
    benchmark_names: dict[str, list[str]] | None = None
    training_overlap: dict[str, Any] | None = None
    examples: dict[str, list[dict[str, Any]]] = {}
    #: `--orders authors`: the fields the benchmark authors' summary prints
    authors_report: dict[str, Any] | None = None
    metrics: dict[str, Any] = {}
    users: dict[str, Any] = {}
    attributes: dict[str, Any] = {}
    by_length_ratio: list[dict[str, Any]] = []
    verdicts: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    #: position, length, calibration and non-verdict shares per split x tier (docs/metrics.md, "Reliability")
    reliability: dict[str, Any] = {}
    #: `tailor eval --repeat N`: verdict agreement and accuracy spread across repeats (docs/metrics.md)
    determinism: dict[str, Any] | None = None


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
