"""tailorbench: human-grounded evaluation of LLM personalization.

`import tailorbench as tb` gives every `tailor` verb under its name, imported on first use (so this import stays
light): `tb.X is tailorbench.api.X` for every name of `tailorbench.api` (`tb.eval`, `tb.report`, `tb.compare`,
`tb.agree`, `tb.tiers`, `tb.train_rm`, `tb.gen_eval`, `tb.build`, `tb.view`, the groups `tb.stages.*` and
`tb.annotate.*`, the result models and configs), each verb with an `*_async` twin; see docs/python.md.
"""

from __future__ import annotations

from tailorbench.version import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `import tailorbench` does not import typing (a third of its time)
if TYPE_CHECKING:
    from typing import Any

    from tailorbench.api import (
        AgreeResult as AgreeResult,
    )
    from tailorbench.api import (
        BuildResult as BuildResult,
    )
    from tailorbench.api import (
        ChoiceResult as ChoiceResult,
    )
    from tailorbench.api import (
        CompareResult as CompareResult,
    )
    from tailorbench.api import (
        EstimatePlanResult as EstimatePlanResult,
    )
    from tailorbench.api import (
        EstimateResult as EstimateResult,
    )
    from tailorbench.api import (
        EstimateSampleResult as EstimateSampleResult,
    )
    from tailorbench.api import (
        EvalConfig as EvalConfig,
    )
    from tailorbench.api import (
        EvalResult as EvalResult,
    )
    from tailorbench.api import (
        GenEvalConfig as GenEvalConfig,
    )
    from tailorbench.api import (
        GenEvalResult as GenEvalResult,
    )
    from tailorbench.api import (
        PrefEvalGenerationResult as PrefEvalGenerationResult,
    )
    from tailorbench.api import (
        RMTrainConfig as RMTrainConfig,
    )
    from tailorbench.api import (
        SuiteResult as SuiteResult,
    )
    from tailorbench.api import (
        TiersResult as TiersResult,
    )
    from tailorbench.api import (
        TrainResult as TrainResult,
    )
    from tailorbench.api import (
        agree as agree,
    )
    from tailorbench.api import (
        agree_async as agree_async,
    )
    from tailorbench.api import (
        annotate as annotate,
    )
    from tailorbench.api import (
        batch_cancel as batch_cancel,
    )
    from tailorbench.api import (
        batch_cancel_async as batch_cancel_async,
    )
    from tailorbench.api import (
        batch_status as batch_status,
    )
    from tailorbench.api import (
        batch_status_async as batch_status_async,
    )
    from tailorbench.api import (
        build as build,
    )
    from tailorbench.api import (
        build_async as build_async,
    )
    from tailorbench.api import (
        cache_clear as cache_clear,
    )
    from tailorbench.api import (
        cache_stats as cache_stats,
    )
    from tailorbench.api import (
        check_data as check_data,
    )
    from tailorbench.api import (
        check_data_async as check_data_async,
    )
    from tailorbench.api import (
        compare as compare,
    )
    from tailorbench.api import (
        compare_async as compare_async,
    )
    from tailorbench.api import (
        convert_data as convert_data,
    )
    from tailorbench.api import (
        convert_data_async as convert_data_async,
    )
    from tailorbench.api import (
        data_task as data_task,
    )
    from tailorbench.api import (
        estimate as estimate,
    )
    from tailorbench.api import (
        estimate_async as estimate_async,
    )
    from tailorbench.api import (
        estimate_plan as estimate_plan,
    )
    from tailorbench.api import (
        estimate_plan_async as estimate_plan_async,
    )
    from tailorbench.api import (
        estimate_sample as estimate_sample,
    )
    from tailorbench.api import (
        estimate_sample_async as estimate_sample_async,
    )
    from tailorbench.api import (
        eval as eval,
    )
    from tailorbench.api import (
        eval_async as eval_async,
    )
    from tailorbench.api import (
        eval_benchmark as eval_benchmark,
    )
    from tailorbench.api import (
        eval_benchmark_async as eval_benchmark_async,
    )
    from tailorbench.api import (
        eval_benchmark_resume as eval_benchmark_resume,
    )
    from tailorbench.api import (
        eval_benchmark_resume_async as eval_benchmark_resume_async,
    )
    from tailorbench.api import (
        eval_many as eval_many,
    )
    from tailorbench.api import (
        eval_many_async as eval_many_async,
    )
    from tailorbench.api import (
        eval_resume as eval_resume,
    )
    from tailorbench.api import (
        eval_resume_async as eval_resume_async,
    )
    from tailorbench.api import (
        eval_suite as eval_suite,
    )
    from tailorbench.api import (
        eval_suite_async as eval_suite_async,
    )
    from tailorbench.api import (
        gen_eval as gen_eval,
    )
    from tailorbench.api import (
        gen_eval_async as gen_eval_async,
    )
    from tailorbench.api import (
        gen_eval_benchmark as gen_eval_benchmark,
    )
    from tailorbench.api import (
        gen_eval_benchmark_async as gen_eval_benchmark_async,
    )
    from tailorbench.api import (
        gen_eval_benchmark_resume as gen_eval_benchmark_resume,
    )
    from tailorbench.api import (
        gen_eval_benchmark_resume_async as gen_eval_benchmark_resume_async,
    )
    from tailorbench.api import (
        gen_eval_resume as gen_eval_resume,
    )
    from tailorbench.api import (
        gen_eval_resume_async as gen_eval_resume_async,
    )
    from tailorbench.api import (
        push_data as push_data,
    )
    from tailorbench.api import (
        push_data_async as push_data_async,
    )
    from tailorbench.api import (
        report as report,
    )
    from tailorbench.api import (
        report_async as report_async,
    )
    from tailorbench.api import (
        run_failures as run_failures,
    )
    from tailorbench.api import (
        stages as stages,
    )
    from tailorbench.api import (
        study as study,
    )
    from tailorbench.api import (
        tiers as tiers,
    )
    from tailorbench.api import (
        tiers_async as tiers_async,
    )
    from tailorbench.api import (
        train_rm as train_rm,
    )
    from tailorbench.api import (
        train_rm_async as train_rm_async,
    )
    from tailorbench.api import (
        view as view,
    )
    from tailorbench.api import (
        view_async as view_async,
    )

#: the names `tailorbench.api` defines (its `__all__`); tests/test_python_api.py checks the two lists agree
__all__ = [
    "AgreeResult", "BuildResult", "ChoiceResult", "CompareResult", "EstimatePlanResult", "EstimateResult",
    "EstimateSampleResult", "EvalConfig", "EvalResult", "GenEvalConfig", "GenEvalResult",
    "PrefEvalGenerationResult", "RMTrainConfig", "SuiteResult", "TiersResult", "TrainResult", "__version__",
    "agree", "agree_async", "annotate", "batch_cancel", "batch_cancel_async", "batch_status", "batch_status_async",
    "build", "build_async", "cache_clear", "cache_stats", "check_data", "check_data_async", "compare",
    "compare_async", "convert_data", "convert_data_async", "data_task", "estimate", "estimate_async",
    "estimate_plan", "estimate_plan_async", "estimate_sample", "estimate_sample_async", "eval", "eval_async",
    "eval_benchmark", "eval_benchmark_async", "eval_benchmark_resume", "eval_benchmark_resume_async", "eval_many",
    "eval_many_async", "eval_resume", "eval_resume_async", "eval_suite", "eval_suite_async", "gen_eval",
    "gen_eval_async", "gen_eval_benchmark", "gen_eval_benchmark_async", "gen_eval_benchmark_resume",
    "gen_eval_benchmark_resume_async", "gen_eval_resume", "gen_eval_resume_async", "push_data", "push_data_async",
    "report", "report_async", "run_failures", "stages", "study", "tiers", "tiers_async", "train_rm",
    "train_rm_async", "view", "view_async",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module("tailorbench.api"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
