"""`tailor data check|convert|push`: integrity of a benchmark; conversion to native JSONL; publication on the
Hugging Face hub."""

from __future__ import annotations

from pathlib import Path

import typer

from tailorbench.cli.benchmark_options import DATA_OPTIONS, TURNS_OPTION, data_options
from tailorbench.cli.common import JSON_HELP, print_json, user_errors

DATA_HELP = "demo, personafeedback, hf:OWNER/NAME or hf:OWNER/NAME@REVISION (pushed by `tailor data push`), or a path"

data_app = typer.Typer(help="Inspect and convert benchmarks.", no_args_is_help=True)


@data_app.command("check")
def check_command(
    path: str = typer.Argument(..., help=DATA_HELP),
    skip_invalid: bool = typer.Option(False, help="skip and count invalid rows instead of stopping"),
    turns: str | None = TURNS_OPTION,
    data_option: list[str] | None = DATA_OPTIONS,
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": the integrity report"),
) -> None:
    """Integrity report: rows per split/tier, repeats, label flips, equal lengths, answer reuse, personas; for the
    other benchmarks (PrefEval, PersonaMem, Personalized RewardBench, PRISM) their own counts and dataset card."""
    from tailorbench import api

    with user_errors():
        report = api.check_data(path, skip_invalid=skip_invalid, options=data_options(turns, data_option)).to_dict()
    if json_out:
        print_json(report)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"data check: {path} ({report['layout']} layout)")
    table.add_column("check", no_wrap=True)
    table.add_column("value", overflow="fold")  # a long value wraps onto more lines, never cut
    stats = report.get("layout_stats") or {}
    rows = [(k, v) for k, v in report.items() if k != "layout_stats"] + [
        (k, v) for k, v in stats.items() if k != "card"] + [(f"card {k}", v) for k, v in stats.get("card", {}).items()]
    for key, value in rows:
        if key in ("skipped", "source", "layout"):
            continue
        table.add_row(key.replace("_", " "), _cell(value))
    Console().print(table)
    for row in report["skipped"][:20]:
        typer.echo(f"skipped {row['path']}:{row['line']} field {row['field']}: {row['message']}", err=True)


def _cell(value: object) -> str:
    """A value of the report as its table shows it: never an empty cell nor `None`."""
    if value is None:
        return "not in this layout"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@data_app.command("convert")
def convert_command(
    path: str = typer.Argument(..., help=DATA_HELP),
    out: Path = typer.Option(..., "--out", "-o", help="what the verb writes: native PairCase JSONL"),
    skip_invalid: bool = typer.Option(False, help="skip and count invalid rows instead of stopping"),
    turns: str | None = TURNS_OPTION,
    data_option: list[str] | None = DATA_OPTIONS,
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": {out, cases}"),
) -> None:
    """Convert any supported layout to native PairCase JSONL (a multiple-choice benchmark: its pair view), with
    a sidecar OUT.layout.json declaring split and tier names other than PersonaFeedback's."""
    from tailorbench import api

    with user_errors():
        n = api.convert_data(path, out, skip_invalid=skip_invalid, options=data_options(turns, data_option)).cases
    if json_out:
        print_json({"out": str(out), "cases": n})
    else:
        typer.echo(f"wrote {n} cases to {out}", err=True)


@data_app.command("push")
def push_command(
    path: str = typer.Argument(..., help=DATA_HELP),
    repo: str = typer.Argument(..., help="the hub dataset repository, OWNER/NAME"),
    license: str | None = typer.Option(None, "--license", help="the licence the data is shared under (required; "
                                                                "an SPDX id such as cc-by-4.0)"),
    private: bool = typer.Option(False, "--private", help="create the hub repository private (when it is new)"),
    dry_run: Path | None = typer.Option(None, "--dry-run", help="write the folder that would be uploaded here; "
                                                                  "upload nothing"),
    skip_invalid: bool = typer.Option(False, help="skip and count invalid rows instead of stopping"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": {repo, rows, license, files, uploaded}"),
) -> None:
    """Push a benchmark to a Hugging Face dataset repository: native JSONL, its tiers and a dataset card with the
    integrity report, in one upload."""
    from tailorbench import api

    with user_errors():
        summary = api.push_data(path, repo, license, private=private, dry_run=dry_run,
                                skip_invalid=skip_invalid).to_dict()
    if json_out:
        print_json(summary)
    elif dry_run is not None:
        typer.echo(f"wrote {summary['rows']} cases and the card to {dry_run} (nothing uploaded)", err=True)
    else:
        typer.echo(f"pushed {summary['rows']} cases to {repo}: {summary['uploaded']}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
