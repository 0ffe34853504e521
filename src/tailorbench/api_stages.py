"""Python twins of `tailor stages ...` (`tb.stages.*`): the functions of `tailorbench.stages.api` under the
verbs' names (`stages example` is `example`; `run_example` stays), returning the pydantic models of
`api_models` that mirror the JSON each verb writes (STAGE.json of a report directory, or what a verb that
writes one file says about it), each with an `*_async` twin. `stage1_ratings`, `stage2_ratings`,
`read_items`, `load_encoder` and `example_dir` are helpers, returned as they are."""

from __future__ import annotations

from tailorbench.aio import async_twin
from tailorbench.api_models import (
    ExtractionReport,
    IncorporationReport,
    RelevanceReport,
    StageExample,
    StageOutput,
    StageSummary,
    TrainedHeadReport,
    returning,
)
from tailorbench.stages import api as _api
from tailorbench.stages.api import example_dir, load_encoder, read_items, stage1_ratings, stage2_ratings

relevance = returning(RelevanceReport)(_api.relevance)
extraction = returning(ExtractionReport)(_api.extraction)
incorporation = returning(IncorporationReport)(_api.incorporation)
baseline = returning(StageOutput)(_api.baseline)
export_relevance = returning(StageOutput)(_api.export_relevance)
generate = returning(StageOutput)(_api.generate)
judge_relevance = returning(StageOutput)(_api.judge_relevance)
extract = returning(StageOutput)(_api.extract)
export_tasks = returning(StageOutput)(_api.export_tasks)
categorise = returning(StageOutput)(_api.categorise)
judge_ab = returning(StageOutput)(_api.judge_ab)
verify = returning(StageOutput)(_api.verify)
classify_relevance = returning(StageOutput)(_api.classify_relevance)
train_verifier = returning(TrainedHeadReport)(_api.train_verifier)
train_relevance = returning(TrainedHeadReport)(_api.train_relevance)
summary = returning(StageSummary)(_api.summary)
#: `tailor stages example`
example = returning(StageExample)(_api.run_example)
run_example = example

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
