"""Python twins of `tailor stages ...` (`tb.stages.*`): the three-stage human-centered evaluation.

The functions of `threestage.verbs` under the verbs' names (`stages report-extraction` is `report_extraction`,
`stages example` is `example`; the analyses' old names `extraction`, `relevance`, `incorporation` still import,
with a DeprecationWarning, for one release), returning the pydantic models of `api.results` that mirror the
JSON each verb writes (STAGE.json of a report directory, or what a verb that writes one file says about it); each
works inside a running event loop too. Every verb checks its arguments before any work, as `tailor stages` does
(one ConfigError naming the option): the numbers by name wherever a verb has them and a model spec with its
options by building the model (building opens nothing; the first call does); the verb itself then claims its
output (`files.as_output`: the output rule with its inputs) before it reads anything. `stage1_ratings`,
`stage2_ratings`, `read_items`, `load_encoder` and `example_dir` are helpers, returned as they are."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from pydantic import ValidationError

from tailorbench.api.renamed import renamed
from tailorbench.api.results import (
    ExtractionReport,
    IncorporationReport,
    Output,
    RelevanceReport,
    StageExample,
    StageOutput,
    StageSummary,
    TrainedHeadReport,
)
from tailorbench.errors import DataError
from tailorbench.failures import FailureCheck, check_max_failed
from tailorbench.options import as_choice, as_float, as_int
from tailorbench.threestage import verbs as _verbs
from tailorbench.threestage.verbs import example_dir, load_encoder, read_items, stage1_ratings, stage2_ratings

#: the option each checked argument is named by in errors (the CLI's flag)
_FLAGS = {"n_resamples": "--n-boot", "conditions": "--condition", "options": "--model-option",
          "test_fraction": "--eval-fraction"}


def _flag(name: str) -> str:
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def _check(args: Mapping[str, Any]) -> None:
    """The arguments a stage verb was given, checked by name before anything is read or computed (the output is
    claimed by the verb, which knows its inputs)."""
    for name in ("val_fraction", "test_fraction"):
        if name in args:
            as_float(_flag(name), args[name], minimum=0.0, maximum=1.0, exclusive_minimum=True,
                     exclusive_maximum=True)
    if "l2" in args:
        as_float("--l2", args["l2"], minimum=0.0, exclusive_minimum=True)
    if "threshold" in args:
        as_float("--threshold", args["threshold"], minimum=0.0, maximum=1.0)
    if "temperature" in args:
        as_float("--temperature", args["temperature"], minimum=0.0)
    for name, low in (("max_tokens", 1), ("min_shared", 1), ("rounds", 0), ("n_resamples", 1)):
        if name in args:
            as_int(_flag(name), args[name], minimum=low)
    if "method" in args:
        as_choice("--method", args["method"], ("bm25", "embedding"))
    for value in args.get("conditions") or ():
        as_choice("--condition", value, ("gold", "predicted", "none"))
    if isinstance(args.get("model"), str):
        from tailorbench.models.backends import make_chat_model

        make_chat_model(args["model"], dict(args.get("options") or {}))


_P = ParamSpec("_P")
_M = TypeVar("_M", bound=Output)


def _typed(model: type[_M], fn: Callable[_P, Any]) -> Callable[_P, _M]:
    """`fn` (a function of `threestage.verbs`) as a verb: its arguments checked, its JSON object returned as
    `model`. Typed for mypy as `fn`'s own parameters returning `model`."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def verb(*args: _P.args, **kwargs: _P.kwargs) -> _M:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        _check(bound.arguments)
        return model.model_validate(fn(*bound.args, **bound.kwargs))

    return verb


#: the stage analyses (`tailor stages report-relevance`, ...), named apart from the model steps (`extract`, ...)
report_relevance = _typed(RelevanceReport, _verbs.relevance)
report_extraction = _typed(ExtractionReport, _verbs.extraction)
report_incorporation = _typed(IncorporationReport, _verbs.incorporation)
baseline = _typed(StageOutput, _verbs.baseline)
export_relevance = _typed(StageOutput, _verbs.export_relevance)
generate = _typed(StageOutput, _verbs.generate)
judge_relevance = _typed(StageOutput, _verbs.judge_relevance)
extract = _typed(StageOutput, _verbs.extract)
export_tasks = _typed(StageOutput, _verbs.export_tasks)
categorise = _typed(StageOutput, _verbs.categorise)
judge_ab = _typed(StageOutput, _verbs.judge_ab)
verify = _typed(StageOutput, _verbs.verify)
classify_relevance = _typed(StageOutput, _verbs.classify_relevance)
train_verifier = _typed(TrainedHeadReport, _verbs.train_verifier)
train_relevance = _typed(TrainedHeadReport, _verbs.train_relevance)
def _stage_figures(path: Path, stage: str, report: dict[str, Any]) -> None:
    """A stage report's figures of the types `StageSummary` holds: a figure of the wrong type in a report edited
    by hand is a DataError naming the file and the field, before the summary is written."""
    try:
        StageSummary.model_validate({stage: report})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or None
        raise DataError(path, None, where, f"{first['msg']}, got {first.get('input')!r}: not a stage report as "
                        "tailorbench writes it; run the stage verb again") from None


def _summary(report_dir: str | Path) -> dict[str, Any]:
    return _verbs.summary(report_dir, check=_stage_figures)


_summary.__doc__ = _verbs.summary.__doc__
_summary.__name__ = _summary.__qualname__ = "summary"
summary = _typed(StageSummary, _summary)
#: `tailor stages example`
example = _typed(StageExample, _verbs.run_example)
run_example = example


def call_counts(info: Mapping[str, Any]) -> tuple[int, int]:
    """(failed, calls) of a stage verb's accounting: `failed`/`calls` at the top (judge-relevance, extract,
    categorise, judge-ab), under `generations` (generate), `refine_calls` (verify: ok/invalid/failed), or one
    accounting per step under `calls` (example)."""
    calls = info.get("calls")
    if isinstance(calls, Mapping):
        steps = [call_counts(step) for step in calls.values() if isinstance(step, Mapping)]
        return sum(f for f, _ in steps), sum(n for _, n in steps)
    if isinstance(info.get("generations"), Mapping):
        return call_counts(info["generations"])
    refine = info.get("refine_calls")
    if isinstance(refine, Mapping):
        return int(refine.get("failed", 0)), sum(int(v) for v in refine.values())
    if isinstance(calls, int) and "failed" in info:
        return int(info["failed"]), calls
    return 0, 0


def failures(verb: str, result: Output | Mapping[str, Any], max_failed: float | None = None) -> FailureCheck:
    """Whether a stage verb's failed model calls exceed `max_failed` (or all of its calls failed): the exit-code-3
    rule of `tailor stages VERB`."""
    info = result.to_dict() if isinstance(result, Output) else result
    failed, calls = call_counts(info)
    return FailureCheck(f"stages {verb}", failed, calls, check_max_failed(max_failed), unit="model calls")


def markdown(stage: str, report: Output | Mapping[str, Any]) -> str:
    """A stage report as `tailor stages STAGE` prints it (`relevance`, `extraction`, `incorporation`,
    `verifier`, `relevance_classifier`)."""
    from tailorbench.threestage.report import TITLES, relevance_markdown, render_markdown, stage_parts

    info = report.to_dict() if isinstance(report, Output) else dict(report)
    if stage == "relevance":
        return relevance_markdown(info)
    return render_markdown(TITLES[stage], *stage_parts(stage, info))


#: the verbs (their `*_async` twins are gone: each only ran the verb in a worker thread)
_VERBS = ("report_relevance", "baseline", "export_relevance", "generate", "judge_relevance", "report_extraction",
          "report_incorporation", "extract", "export_tasks", "categorise", "judge_ab", "summary", "train_verifier",
          "verify", "train_relevance", "classify_relevance", "example")

__all__ = [
    "baseline",
    "call_counts",
    "categorise",
    "classify_relevance",
    "example",
    "example_dir",
    "export_relevance",
    "export_tasks",
    "extract",
    "failures",
    "generate",
    "judge_ab",
    "judge_relevance",
    "load_encoder",
    "markdown",
    "read_items",
    "report_extraction",
    "report_incorporation",
    "report_relevance",
    "run_example",
    "stage1_ratings",
    "stage2_ratings",
    "summary",
    "train_relevance",
    "train_verifier",
    "verify",
]

#: the old names of the stage analyses (`tb.stages.extraction`, ...), kept for one release
_RENAMED = {old: f"report_{old}" for old in ("relevance", "extraction", "incorporation")}
if not TYPE_CHECKING:
    __getattr__ = renamed(__name__, _RENAMED, twins=_VERBS)
