"""`tailor gen-eval`: a model answers with the persona; a validated judge compares its answers with references.

`gen_eval` is the one entry point of `tailor gen-eval`: PrefEval runs its own generation task
(`api.benchmarks.prefeval_generation`), every other benchmark the gen-eval pipeline (`geneval.run`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tailorbench.api.results import GenEvalResult, PrefEvalGenerationResult
from tailorbench.errors import ConfigError
from tailorbench.failures import check_max_failed
from tailorbench.geneval.config import GenEvalConfig

__all__ = ["GenEvalConfig", "gen_eval"]


def gen_eval(data: str | Path | None = None, model: str | None = None, judge: str | None = None, *,
             out: str | Path | None = None, config: GenEvalConfig | None = None,
             data_options: Mapping[str, Any] | None = None, progress: bool = False,
             **fields: Any) -> GenEvalResult | PrefEvalGenerationResult:
    """`tailor gen-eval`: `model` answers the questions of the benchmark `data`, `judge` compares its answers
    with the references in both orders (validated first), and the run's results.json is returned (a
    `GenEvalResult`). On PrefEval, its own generation task: the model answers after the preference and the
    filler turns of `data_options`, the `llm:` judge's model asks the four checks (a `PrefEvalGenerationResult`).

    `fields` are the other `GenEvalConfig` fields (`reference`, `setting`, `per_tier`, `seed`, `judge_options`,
    ...), `config` a base for them; `data`, `model` and `judge` left out are the config's (else `demo`, none,
    `longer`). `out` is the run directory."""
    if isinstance(data, GenEvalConfig):  # the form before 0.2: gen_eval(config, out, progress)
        warnings.warn("tb.gen_eval(config, out) is deprecated and goes in the next release: call "
                      "tb.gen_eval(out=OUT, config=config) (CHANGELOG.md)", DeprecationWarning, stacklevel=2)
        data, config, out, model = None, data, out if out is not None else model, None
        progress = bool(judge) if isinstance(judge, bool) else progress
        judge = None
    if out is None:
        raise ConfigError("--out is required (or --resume RUN_DIR)")
    base = asdict(config) if config is not None else {}
    given = {k: v for k, v in (("data", data), ("model", model), ("judge", judge)) if v is not None}
    cfg = GenEvalConfig(**{**base, **fields, **{k: str(v) for k, v in given.items()}})
    return _run(cfg, Path(out), data_options, progress)


def _run(config: GenEvalConfig, out: Path, data_options: Mapping[str, Any] | None,
         progress: bool) -> GenEvalResult | PrefEvalGenerationResult:
    from tailorbench.api.benchmarks import GENERATION_LAYOUTS, data_task, prefeval_generation
    from tailorbench.geneval.run import run_gen_eval

    if not config.model:
        raise ConfigError("--model is required: the model under test, e.g. openai:MODEL@http://host/v1")
    _, layout = data_task(config.data)
    if layout in GENERATION_LAYOUTS:
        return prefeval_generation(config, out, data_options, layout)
    if data_options:
        raise ConfigError(f"--data-option / --turns: the {layout} layout takes none here")
    check_max_failed(config.max_failed)
    return GenEvalResult.from_run(run_gen_eval(config, out, progress=progress))


def resume_gen_eval(run_dir: Path, progress: bool, max_failed: float | None) -> GenEvalResult:
    """A gen-eval run continues where it stopped; finished calls are not repeated (`max_failed`: replace the
    run's own threshold)."""
    from tailorbench.geneval.run import resume_gen_eval as resume

    if max_failed is not None:
        check_max_failed(max_failed)
    return GenEvalResult.from_run(resume(run_dir, progress=progress, max_failed=max_failed))
