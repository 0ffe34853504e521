"""`tailor build run CONFIG.yaml [--until STAGE]`: the benchmark construction pipeline (see docs/build.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tailorbench.cli.common import (
    EXECUTOR_OPTIONS,
    JSON_HELP,
    RAY_ADDRESS_OPTION,
    parse_pairs,
    print_json,
    user_errors,
)
from tailorbench.failures import EXIT_FAILED

if TYPE_CHECKING:
    from tailorbench.api.results import BuildResult

build_app = typer.Typer(help="Build a pairwise benchmark from user memory: profile -> questions -> answers -> "
                             "pairs -> export.", no_args_is_help=True)


@build_app.command("run")
def build_run(
    config: Path = typer.Argument(..., help="build config (YAML); see examples/construction/config.yaml"),
    until: str | None = typer.Option(None, help="stop after this stage: profile, questions, answers, pairs, export"),
    out: Path | None = typer.Option(None, "--out", "-o", help="what the verb writes: the output directory (overrides "
                                                                "`out` in the config)"),
    model: str | None = typer.Option(None, "--model", "-m", help="model spec (overrides `model` in the config), "
                                                                 "e.g. openai:local@http://127.0.0.1:8080/v1"),
    max_failed: float | None = typer.Option(
        None, "--max-failed", help="exit with code 3 when a model stage gave up on more than this share of its "
                                   "items (0.05 = 5%); default 0: any; a stage that produced nothing always exits 3"),
    executor: str | None = typer.Option(
        None, help="where the work runs (the model's): local (this process, the default) or ray (a vllm: model's "
                   "engines as Ray Data LLM replicas on a Ray cluster, docs/scale.md); overrides `executor` in the "
                   "config"),
    ray_address: str | None = RAY_ADDRESS_OPTION,
    executor_option: list[str] | None = EXECUTOR_OPTIONS,
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": the build summary"),
) -> None:
    """Run the pipeline; finished stages are reused, model calls come from the call cache when seen before.

    Exit code 3 when a stage produced nothing, or a model stage gave up on items (more than --max-failed)."""
    from tailorbench import api

    with user_errors():
        summary = api.build(config, until=until, out=out, model=model, executor=executor, ray_address=ray_address,
                            executor_options=parse_pairs(executor_option, "--executor-option"),
                            max_failed=max_failed)
    if json_out:
        print_json(summary)
    else:
        _print_summary(summary)
    for problem in summary.problems:
        typer.echo(f"error: {problem}", err=True)
    if summary.problems:
        raise typer.Exit(EXIT_FAILED)


def _print_summary(summary: BuildResult) -> None:
    """One line per stage and the model's counters, on stderr."""
    for s in summary.stages:
        typer.echo(f"{s['name']:9} {s['status']:6} records {s['records']:5}  attempts {s['attempts']:4}  "
                   f"gave up {s['gave_up']:3}  invalid json {s['invalid_json']:3}  schema errors "
                   f"{s['schema_errors']:3}  call failures {s['call_failures']:3}", err=True)
    if summary.model is not None:
        st = summary.model.get("stats", {})
        typer.echo(f"model: {st.get('requests', 0)} requests, {st.get('cache_hits', 0)} cache hits, "
                   f"{st.get('failures', 0)} failures", err=True)
    typer.echo(f"-> {summary.out}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(build_app, name="build")
