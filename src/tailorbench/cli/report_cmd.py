"""`tailor report` (merge runs into a leaderboard) and `tailor compare` (paired bootstrap of two runs)."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from tailorbench.cli.common import JSON_HELP, N_BOOT_HELP, print_json, user_errors
from tailorbench.failures import EXIT_BAD_INPUT


def report_command(
    runs: list[Path] = typer.Argument(..., help="run directories"),
    out: Path = typer.Option(Path("."), "--out", "-o", help="where report.md and report.html go"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": the merged results"),
    push: str | None = typer.Option(None, "--push", help="also publish the leaderboard to this hub dataset, "
                                                          "OWNER/NAME (results.jsonl and the report as its card)"),
    private: bool = typer.Option(False, "--private", help="with --push: create the repository private (when new)"),
) -> None:
    """Merge run directories into one leaderboard (report.md, report.html). A run whose manifest says running
    while no process holds its lock is shown as interrupted."""
    from tailorbench import api

    with user_errors():
        results = api.report(runs, out, push=push, private=private)
    if push is not None:
        typer.echo(f"pushed the leaderboard of {len(results)} runs to {push}", err=True)
    if json_out:
        print_json(results)
    else:
        typer.echo((out / "report.md").read_text(encoding="utf-8"))
        typer.echo("browse the cases: tailor view " + " ".join(shlex.quote(str(r)) for r in runs))


def compare_command(
    run_a: Path = typer.Argument(..., help="run directory A"),
    run_b: Path = typer.Argument(..., help="run directory B"),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (paired, over shared cases)"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Paired bootstrap of the accuracy difference A - B on the cases both runs judged."""
    from tailorbench import api

    with user_errors():
        result = api.compare(run_a, run_b, n_boot=n_boot, seed=seed).to_dict()
    if json_out:
        print_json(result)
        return
    if result["difference"] is None:
        typer.echo(f"error: {run_a} and {run_b} share no judged case", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    lo, hi = result["ci"]
    typer.echo(f"{result['a']} - {result['b']}: {100 * result['difference']:+.1f} points "
               f"[{100 * lo:+.1f}, {100 * hi:+.1f}] on {result['n']} shared cases, p≈{result['p_two_sided']:.3f}")


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
    app.command("compare")(compare_command)
