"""`tailor batch status|cancel RUN`: the provider batches of a run left waiting (batch mode, docs/models.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import JSON_HELP, print_json, user_errors
from tailorbench.failures import EXIT_FAILED

batch_app = typer.Typer(help="Provider batches of a run (batch mode): status and cancel.", no_args_is_help=True)
_RUN = typer.Argument(..., help="the run directory (its batches/ holds the recorded batches)")


@batch_app.command("status")
def status_command(
    run: Path = _RUN,
    live: bool = typer.Option(True, help="also ask the provider for the status of the batches not ended"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": the batches"),
) -> None:
    """Every recorded batch of the run: status, requests, cost; the provider's status now."""
    from tailorbench import api

    with user_errors():
        result = api.batch_status(run, live=live)
    if json_out:
        print_json(result)
        return
    for row in result.batches:
        typer.echo(_line(row))
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.by_status.items()))
    cost = "" if result.cost_usd is None else (
        f"; cost {result.cost_usd:.4f} USD (synchronous {result.sync_cost_usd or 0:.4f})")
    typer.echo(f"{len(result.batches)} batches ({counts}), {result.requests} requests{cost}", err=True)
    if result.open:
        typer.echo(f"{result.open} still open: `{result.resume_command}` re-attaches to them", err=True)


@batch_app.command("cancel")
def cancel_command(
    run: Path = _RUN,
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": the batches a cancel was sent for"),
) -> None:
    """Cancel every recorded batch of the run that has not ended (a resume sends what they did not answer)."""
    from tailorbench import api

    with user_errors():
        result = api.batch_cancel(run)
    if json_out:
        print_json(result)
    else:
        for row in result.cancelled:
            typer.echo(_line(row) + (f"  cancel failed: {row['cancel_error']}" if row.get("cancel_error") else
                                     "  cancel sent"))
        sent = len(result.cancelled) - result.failed
        typer.echo(f"cancel sent for {sent} batches; `{result.resume_command}` sends what they did not answer"
                   if result.cancelled else "no batch left to cancel: every recorded batch has ended", err=True)
    if result.failed:
        typer.echo(f"error: {result.failed} of {len(result.cancelled)} batches could not be cancelled", err=True)
        raise typer.Exit(EXIT_FAILED)


def _line(row: dict[str, Any]) -> str:
    """One batch: id, model, recorded status (and the provider's now), requests, cost, error."""
    live = row.get("live_status") or (f"unknown: {row['live_error']}" if row.get("live_error") else None)
    counts = row.get("live_counts") or row.get("counts") or {}
    status = row["status"] + (f" (now {live})" if live else "")
    parts = [str(row.get("batch_id") or "(no id yet)"), row["model"], status,
             f"{row['requests']} requests" + (f" {counts}" if counts else "")]
    if row.get("cost_usd") is not None:
        parts.append(f"{row['cost_usd']:.4f} USD")
    if row.get("created"):
        parts.append("created " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["created"])))
    if row.get("error"):
        parts.append(f"error: {row['error']}")
    return "  ".join(parts)


def register(app: typer.Typer) -> None:
    app.add_typer(batch_app, name="batch")
