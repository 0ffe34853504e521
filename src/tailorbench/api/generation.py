"""`tailor gen-eval`: a model answers with the persona; a validated judge compares its answers with references."""

from __future__ import annotations

from pathlib import Path

from tailorbench.aio import async_twin
from tailorbench.api.results import GenEvalResult
from tailorbench.failures import check_max_failed
from tailorbench.geneval.config import GenEvalConfig

__all__ = ["GenEvalConfig", "gen_eval", "gen_eval_async", "gen_eval_resume", "gen_eval_resume_async"]


def gen_eval(config: GenEvalConfig, out: str | Path, progress: bool = False) -> GenEvalResult:
    """`tailor gen-eval`: generate, judge against references in both orders, validate the judge, report; returns
    the run's results.json."""
    from tailorbench.errors import ConfigError
    from tailorbench.geneval.run import run_gen_eval

    if not config.model:
        raise ConfigError("--model is required: the model under test, e.g. openai:MODEL@http://host/v1")
    check_max_failed(config.max_failed)
    return GenEvalResult.from_run(run_gen_eval(config, Path(out), progress=progress))


def gen_eval_resume(run_dir: str | Path, progress: bool = False, max_failed: float | None = None) -> GenEvalResult:
    """`tailor gen-eval --resume RUN_DIR`: continue a killed gen-eval run; finished calls are not repeated."""
    from tailorbench.geneval.run import resume_gen_eval

    if max_failed is not None:
        check_max_failed(max_failed)
    return GenEvalResult.from_run(resume_gen_eval(Path(run_dir), progress=progress, max_failed=max_failed))


gen_eval_async = async_twin(gen_eval)
gen_eval_resume_async = async_twin(gen_eval_resume)
