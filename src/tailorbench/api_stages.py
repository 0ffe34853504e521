"""Python twins of `tailor stages ...` (`tb.stages.*`): the functions of `tailorbench.stages.api` under the
verbs' names (`stages example` is `example`; `run_example` stays), each with an `*_async` twin."""

from __future__ import annotations

from tailorbench.aio import async_twin
from tailorbench.stages.api import (
    baseline,
    categorise,
    classify_relevance,
    example_dir,
    export_relevance,
    export_tasks,
    extract,
    extraction,
    generate,
    incorporation,
    judge_ab,
    judge_relevance,
    load_encoder,
    read_items,
    relevance,
    run_example,
    stage1_ratings,
    stage2_ratings,
    summary,
    train_relevance,
    train_verifier,
    verify,
)

#: `tailor stages example`
example = run_example

__all__ = [
    "baseline",
    "baseline_async",
    "categorise",
    "categorise_async",
    "classify_relevance",
    "classify_relevance_async",
    "example",
    "example_async",
    "example_dir",
    "export_relevance",
    "export_relevance_async",
    "export_tasks",
    "export_tasks_async",
    "extract",
    "extract_async",
    "extraction",
    "extraction_async",
    "generate",
    "generate_async",
    "incorporation",
    "incorporation_async",
    "judge_ab",
    "judge_ab_async",
    "judge_relevance",
    "judge_relevance_async",
    "load_encoder",
    "read_items",
    "relevance",
    "relevance_async",
    "run_example",
    "stage1_ratings",
    "stage2_ratings",
    "summary",
    "summary_async",
    "train_relevance",
    "train_relevance_async",
    "train_verifier",
    "train_verifier_async",
    "verify",
    "verify_async",
]

relevance_async = async_twin(relevance)
baseline_async = async_twin(baseline)
export_relevance_async = async_twin(export_relevance)
generate_async = async_twin(generate)
judge_relevance_async = async_twin(judge_relevance)
extraction_async = async_twin(extraction)
incorporation_async = async_twin(incorporation)
extract_async = async_twin(extract)
export_tasks_async = async_twin(export_tasks)
categorise_async = async_twin(categorise)
judge_ab_async = async_twin(judge_ab)
summary_async = async_twin(summary)
train_verifier_async = async_twin(train_verifier)
verify_async = async_twin(verify)
train_relevance_async = async_twin(train_relevance)
classify_relevance_async = async_twin(classify_relevance)
example_async = async_twin(example)
