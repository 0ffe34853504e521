"""The public API: every `tailor` verb as a typed function (`tb.X is tailorbench.api.X`), each with an
`*_async` twin, returning the pydantic models of `api.results` that mirror the JSON the verb writes.

Verbs by area, one module each: `evaluation` (eval, report, compare), `data` (data check/convert/push, cache),
`agreement` (agree, tiers), `estimation` (estimate, estimate sample, estimate plan), `training` (train-rm),
`generation` (gen-eval), `benchmarks` (eval and gen-eval on any benchmark, suites), `construction` (build),
`viewing` (view); the verb groups `stages` (`tailor stages ...`) and `annotate` (`tailor annotate ...`) are
modules of verbs. Names resolve on first use (PEP 562), so importing
this package imports no capability until a verb is asked for. The CLI (`tailorbench.cli`) is a thin layer over
these functions and nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tailorbench.api import annotate as annotate
    from tailorbench.api import stages as stages
    from tailorbench.api.agreement import agree as agree
    from tailorbench.api.agreement import agree_async as agree_async
    from tailorbench.api.agreement import tiers as tiers
    from tailorbench.api.agreement import tiers_async as tiers_async
    from tailorbench.api.batches import batch_cancel as batch_cancel
    from tailorbench.api.batches import batch_cancel_async as batch_cancel_async
    from tailorbench.api.batches import batch_status as batch_status
    from tailorbench.api.batches import batch_status_async as batch_status_async
    from tailorbench.api.benchmarks import data_task as data_task
    from tailorbench.api.benchmarks import eval_benchmark as eval_benchmark
    from tailorbench.api.benchmarks import eval_benchmark_async as eval_benchmark_async
    from tailorbench.api.benchmarks import eval_benchmark_resume as eval_benchmark_resume
    from tailorbench.api.benchmarks import eval_benchmark_resume_async as eval_benchmark_resume_async
    from tailorbench.api.benchmarks import eval_suite as eval_suite
    from tailorbench.api.benchmarks import eval_suite_async as eval_suite_async
    from tailorbench.api.benchmarks import gen_eval_benchmark as gen_eval_benchmark
    from tailorbench.api.benchmarks import gen_eval_benchmark_async as gen_eval_benchmark_async
    from tailorbench.api.benchmarks import gen_eval_benchmark_resume as gen_eval_benchmark_resume
    from tailorbench.api.benchmarks import gen_eval_benchmark_resume_async as gen_eval_benchmark_resume_async
    from tailorbench.api.construction import build as build
    from tailorbench.api.construction import build_async as build_async
    from tailorbench.api.data import cache_clear as cache_clear
    from tailorbench.api.data import cache_stats as cache_stats
    from tailorbench.api.data import check_data as check_data
    from tailorbench.api.data import check_data_async as check_data_async
    from tailorbench.api.data import convert_data as convert_data
    from tailorbench.api.data import convert_data_async as convert_data_async
    from tailorbench.api.data import push_data as push_data
    from tailorbench.api.data import push_data_async as push_data_async
    from tailorbench.api.estimation import estimate as estimate
    from tailorbench.api.estimation import estimate_async as estimate_async
    from tailorbench.api.estimation import estimate_plan as estimate_plan
    from tailorbench.api.estimation import estimate_plan_async as estimate_plan_async
    from tailorbench.api.estimation import estimate_sample as estimate_sample
    from tailorbench.api.estimation import estimate_sample_async as estimate_sample_async
    from tailorbench.api.evaluation import EvalConfig as EvalConfig
    from tailorbench.api.evaluation import compare as compare
    from tailorbench.api.evaluation import compare_async as compare_async
    from tailorbench.api.evaluation import eval as eval
    from tailorbench.api.evaluation import eval_async as eval_async
    from tailorbench.api.evaluation import eval_many as eval_many
    from tailorbench.api.evaluation import eval_many_async as eval_many_async
    from tailorbench.api.evaluation import eval_resume as eval_resume
    from tailorbench.api.evaluation import eval_resume_async as eval_resume_async
    from tailorbench.api.evaluation import report as report
    from tailorbench.api.evaluation import report_async as report_async
    from tailorbench.api.evaluation import run_failures as run_failures
    from tailorbench.api.generation import GenEvalConfig as GenEvalConfig
    from tailorbench.api.generation import gen_eval as gen_eval
    from tailorbench.api.generation import gen_eval_async as gen_eval_async
    from tailorbench.api.generation import gen_eval_resume as gen_eval_resume
    from tailorbench.api.generation import gen_eval_resume_async as gen_eval_resume_async
    from tailorbench.api.results import AgreeResult as AgreeResult
    from tailorbench.api.results import BuildResult as BuildResult
    from tailorbench.api.results import ChoiceResult as ChoiceResult
    from tailorbench.api.results import CompareResult as CompareResult
    from tailorbench.api.results import EstimatePlanResult as EstimatePlanResult
    from tailorbench.api.results import EstimateResult as EstimateResult
    from tailorbench.api.results import EstimateSampleResult as EstimateSampleResult
    from tailorbench.api.results import EvalResult as EvalResult
    from tailorbench.api.results import GenEvalResult as GenEvalResult
    from tailorbench.api.results import PrefEvalGenerationResult as PrefEvalGenerationResult
    from tailorbench.api.results import SuiteResult as SuiteResult
    from tailorbench.api.results import TiersResult as TiersResult
    from tailorbench.api.results import TrainResult as TrainResult
    from tailorbench.api.training import RMTrainConfig as RMTrainConfig
    from tailorbench.api.training import train_rm as train_rm
    from tailorbench.api.training import train_rm_async as train_rm_async
    from tailorbench.api.viewing import view as view
    from tailorbench.api.viewing import view_async as view_async

#: area module -> the public names it defines (each module's `__all__` lists the same)
_AREAS: dict[str, tuple[str, ...]] = {
    "evaluation": ("EvalConfig", "eval", "eval_async", "eval_many", "eval_many_async", "eval_resume",
                   "eval_resume_async", "report", "report_async", "compare", "compare_async", "run_failures"),
    "data": ("check_data", "check_data_async", "convert_data", "convert_data_async", "push_data",
             "push_data_async", "cache_stats", "cache_clear"),
    "agreement": ("agree", "agree_async", "tiers", "tiers_async"),
    "estimation": ("estimate", "estimate_async", "estimate_sample", "estimate_sample_async", "estimate_plan",
                   "estimate_plan_async"),
    "training": ("RMTrainConfig", "train_rm", "train_rm_async"),
    "generation": ("GenEvalConfig", "gen_eval", "gen_eval_async", "gen_eval_resume", "gen_eval_resume_async"),
    "benchmarks": ("data_task", "eval_benchmark", "eval_benchmark_async", "eval_benchmark_resume",
                   "eval_benchmark_resume_async", "eval_suite", "eval_suite_async", "gen_eval_benchmark",
                   "gen_eval_benchmark_async", "gen_eval_benchmark_resume", "gen_eval_benchmark_resume_async"),
    "construction": ("build", "build_async"),
    "batches": ("batch_status", "batch_status_async", "batch_cancel", "batch_cancel_async"),
    "viewing": ("view", "view_async"),
    "results": ("AgreeResult", "BuildResult", "ChoiceResult", "CompareResult", "EstimatePlanResult",
                "EstimateResult", "EstimateSampleResult", "EvalResult", "GenEvalResult",
                "PrefEvalGenerationResult", "SuiteResult", "TiersResult", "TrainResult"),
}
#: the verb groups: modules of verbs (`tb.stages.report_relevance`, `tb.annotate.create_project`)
_GROUPS = ("annotate", "stages", "study")
_WHERE = {name: area for area, names in _AREAS.items() for name in names}

__all__ = sorted([*_WHERE, *_GROUPS])


def __getattr__(name: str) -> Any:
    if name in _GROUPS:
        value: Any = importlib.import_module(f"{__name__}.{name}")
    elif name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
