"""The public names of the Python API, declared once.

`tailorbench.api` resolves these names from its area modules, the facade `tailorbench` (`import tailorbench as
tb`) re-exports exactly them, and docs/python.md lists exactly them (tests/test_python_api.py checks all three).
The verb groups (`tb.stages`, `tb.annotate`, `tb.study`) are modules whose own `__all__` lists their verbs.

`DEPRECATED` maps each name that was removed from the API to what replaces it: the old name still imports, for
one release, with a `DeprecationWarning` naming the replacement (CHANGELOG.md lists them). This module imports
nothing, so the facade reads it without loading the API.
"""

from __future__ import annotations

#: area module of `tailorbench.api` -> the public names it defines (each module's `__all__` lists the same)
AREAS: dict[str, tuple[str, ...]] = {
    "evaluation": ("EvalConfig", "eval", "eval_async", "resume", "report", "compare", "run_failures"),
    "data": ("check_data", "convert_data", "push_data", "cache_stats", "cache_clear"),
    "agreement": ("agree", "tiers"),
    "estimation": ("estimate", "estimate_sample", "estimate_plan"),
    "training": ("RMTrainConfig", "train_rm"),
    "generation": ("GenEvalConfig", "gen_eval"),
    "benchmarks": ("data_task",),
    "construction": ("build", "build_async"),
    "batches": ("batch_status", "batch_cancel"),
    "viewing": ("view",),
    "results": ("AgreeResult", "BuildResult", "ChoiceResult", "CompareResult", "EstimatePlanResult",
                "EstimateResult", "EstimateSampleResult", "EvalResult", "GenEvalResult",
                "PrefEvalGenerationResult", "SuiteResult", "TiersResult", "TrainResult"),
}

#: the verb groups: modules of verbs (`tb.stages.relevance`, `tb.annotate.create_project`, `tb.study.run`)
GROUPS: tuple[str, ...] = ("annotate", "arena", "stages", "study")

#: every public name of `tailorbench.api`, sorted (the facade adds `__version__`)
PUBLIC: tuple[str, ...] = tuple(sorted([*(n for names in AREAS.values() for n in names), *GROUPS]))

#: verbs whose `*_async` twin runs on the caller's event loop (the rest are blocking calls, which work inside a
#: running loop too: `aio.run_sync`)
ON_THE_LOOP: tuple[str, ...] = ("eval", "build")

#: a removed name -> the name that replaces it; each still imports, with a DeprecationWarning, until the next
#: release (`api._deprecated` holds what it resolves to)
DEPRECATED: dict[str, str] = {
    "eval_many": "eval",
    "eval_benchmark": "eval",
    "eval_suite": "eval",
    "eval_resume": "resume",
    "eval_benchmark_resume": "resume",
    "gen_eval_benchmark": "gen_eval",
    "gen_eval_resume": "resume",
    "gen_eval_benchmark_resume": "resume",
    # the `*_async` twins that only ran the blocking verb in a worker thread
    **{f"{verb}_async": verb for verb in (
        "agree", "tiers", "check_data", "convert_data", "push_data", "estimate", "estimate_sample",
        "estimate_plan", "report", "compare", "train_rm", "gen_eval", "batch_status", "batch_cancel", "view")},
    **{f"{old}_async": new for old, new in (
        ("eval_many", "eval_async"), ("eval_benchmark", "eval_async"), ("eval_suite", "eval"),
        ("eval_resume", "resume"), ("eval_benchmark_resume", "resume"), ("gen_eval_resume", "resume"),
        ("gen_eval_benchmark", "gen_eval"), ("gen_eval_benchmark_resume", "resume"))},
}
