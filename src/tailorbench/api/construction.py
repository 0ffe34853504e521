"""`tailor build run`: build a pairwise benchmark from user memory (profile -> questions -> answers -> pairs)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailorbench.api.results import BuildResult
from tailorbench.failures import check_max_failed

if TYPE_CHECKING:
    from tailorbench.construction.config import BuildConfig

__all__ = ["build", "build_async"]


def _config(config: BuildConfig | str | Path, overrides: Mapping[str, Any]) -> BuildConfig:
    from tailorbench.construction.config import BuildConfig, load_build_config

    fields = {k: v for k, v in overrides.items() if v is not None and v != {}}
    if "out" in fields:
        fields["out"] = str(Path(fields["out"]).resolve())
    if isinstance(config, BuildConfig):
        return config.model_copy(update=fields) if fields else config
    return load_build_config(config, fields or None)


def _result(summary: Any, max_failed: float | None) -> BuildResult:
    from tailorbench.construction.pipeline import build_problems

    problems = build_problems(summary, check_max_failed(max_failed))
    return BuildResult.model_validate(summary.as_dict()).with_problems(problems)


def build(config: BuildConfig | str | Path, until: str | None = None, out: str | Path | None = None,
          model: str | None = None, executor: str | None = None, ray_address: str | None = None,
          executor_options: Mapping[str, Any] | None = None, max_failed: float | None = None) -> BuildResult:
    """`tailor build run CONFIG`: the construction pipeline (finished stages reused); `out`, `model` and the
    executor override the config's. `.problems` says what makes the CLI exit 3 (`max_failed`: the share of
    items a model stage may give up on)."""
    from tailorbench.construction.pipeline import run_build

    check_max_failed(max_failed)
    cfg = _config(config, {"out": out, "model": model, "executor": executor, "ray_address": ray_address,
                           "executor_options": dict(executor_options or {})})
    return _result(run_build(cfg, until=until), max_failed)


async def build_async(config: BuildConfig | str | Path, until: str | None = None, out: str | Path | None = None,
                      model: str | None = None, max_failed: float | None = None) -> BuildResult:
    """`build` as a coroutine: the pipeline's calls run on the caller's event loop."""
    from tailorbench.construction.pipeline import run_build_async

    check_max_failed(max_failed)
    summary = await run_build_async(_config(config, {"out": out, "model": model}), until, None)
    return _result(summary, max_failed)
