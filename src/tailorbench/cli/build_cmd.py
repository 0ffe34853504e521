"""`tailor build run CONFIG.yaml [--until STAGE]`: the benchmark construction pipeline (see docs/build.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from tailorbench.cli.common import print_json, user_errors

build_app = typer.Typer(help="Build a pairwise benchmark from user memory: profile -> questions -> answers -> "
                             "pairs -> export.", no_args_is_help=True)


@build_app.command("run")
def build_run(
    config: Path = typer.Argument(..., help="build config (YAML); see examples/build/config.yaml"),
    until: str | None = typer.Option(None, help="stop after this stage: profile, questions, answers, pairs, export"),
    out: Path | None = typer.Option(None, "--out", "-o", help="output directory (overrides `out` in the config)"),
    json_out: bool = typer.Option(False, "--json", help="print the build summary as JSON"),
) -> None:
    """Run the pipeline; finished stages are reused, model calls come from the call cache when seen before."""
    from tailorbench.build.config import load_build_config
    from tailorbench.build.pipeline import run_build

    with user_errors():
        overrides = {"out": str(out.resolve())} if out is not None else None
        summary = run_build(load_build_config(config, overrides), until=until)
    if json_out:
        print_json(summary.as_dict())
        return
    for stage in summary.stages:
        s = stage.stats
        typer.echo(f"{stage.name:9} {stage.status:6} records {stage.records:5}  attempts {s['attempts']:4}  "
                   f"gave up {s['gave_up']:3}  invalid json {s['invalid_json']:3}  schema errors "
                   f"{s['schema_errors']:3}  call failures {s['call_failures']:3}", err=True)
    if summary.model is not None:
        st = summary.model.get("stats", {})
        typer.echo(f"model: {st.get('requests', 0)} requests, {st.get('cache_hits', 0)} cache hits, "
                   f"{st.get('failures', 0)} failures -> {summary.out}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(build_app, name="build")
