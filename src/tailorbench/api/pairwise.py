"""The pairwise judge loop as the API runs it: an `EvalConfig` from a base and fields, checked as `tailor eval`
checks them, and the run directories of judges x settings over one pairwise benchmark. Shared by `tb.eval`
(api/evaluation.py) and a multiple-choice benchmark's pair view (api/benchmarks.py)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from tailorbench.api.results import EvalResult
from tailorbench.errors import ConfigError
from tailorbench.evaluate.runner import EvalConfig, load_config, run_eval, run_matrix
from tailorbench.failures import check_max_failed

__all__ = ["eval_config", "pairwise_runs"]


def eval_config(config: EvalConfig | None, fields: dict[str, Any]) -> EvalConfig:
    """An `EvalConfig` from a base and fields, with the choices checked as `tailor eval` checks them."""
    base = asdict(config) if config is not None else {}
    merged = EvalConfig(**{**base, **fields})
    if merged.orders not in ("both", "random", "authors"):
        raise ConfigError("--orders must be both, random or authors")
    if merged.ci_unit not in ("case", "user"):
        raise ConfigError("--ci-unit must be case or user")
    check_max_failed(merged.max_failed)
    return merged


def pairwise_runs(data: str, judges: list[str], settings: list[str], *, out: str | Path,
                  config: EvalConfig | None, repeat: int, progress: bool, fields: dict[str, Any]) -> list[EvalResult]:
    """`tailor eval`'s judge loop: one run directory per judge x setting under `out`, plus the merged report at
    `out` (one judge in one setting: `out` is the run directory); `repeat` N > 1: each run judged N - 1 more times
    without the call cache (`RUN/repeats/K`), its determinism in results.json and the report."""
    from tailorbench.evaluate.repeats import check_repeat, run_repeats

    base = eval_config(config, {**fields, "data": data, "judge": judges[0], "setting": settings[0]})
    check_repeat(repeat, base.executor)
    if len(judges) == 1 and len(settings) == 1:
        runs = [run_eval(base, Path(out), progress=progress)]
    else:
        runs = run_matrix(base, judges, settings, Path(out), progress=progress)
    if repeat > 1:
        for run in runs:
            run_repeats(load_config(run), run, repeat, progress=progress)
        if len(runs) > 1:
            from tailorbench.run_kinds import write_merged_report

            write_merged_report(runs, Path(out))
    return [EvalResult.from_run(r) for r in runs]
