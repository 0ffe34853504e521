"""`tailor cache stats|clear`: look at and empty the call cache that every model call shares."""

from __future__ import annotations

from pathlib import Path

import typer

from tailorbench.cli.common import JSON_HELP, print_json, user_errors
from tailorbench.cli.vocabulary import duration

cache_app = typer.Typer(help="The model call cache (SQLite): stats and clear.", no_args_is_help=True)

_PATH_HELP = "cache file (default: $TAILORBENCH_CALL_CACHE or ~/.cache/tailorbench/calls.sqlite)"


@cache_app.command("stats")
def stats_command(
    path: Path | None = typer.Option(None, "--path", help=_PATH_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": the stats"),
) -> None:
    """Entries and size, per backend / model / base URL."""
    from tailorbench import api

    with user_errors():
        stats = api.cache_stats(path).to_dict()
    if json_out:
        print_json(stats)
        return
    if not stats["exists"]:
        typer.echo(f"{stats['path']}: no cache yet")
        return
    typer.echo(f"{stats['path']}: {stats['entries']} entries, {stats['bytes'] / 1e6:.1f} MB")
    for row in stats["models"]:
        where = f" @ {row['base_url']}" if row["base_url"] else ""
        typer.echo(f"  {row['backend']}:{row['model']}{where} [{row['kind']}]: {row['entries']} entries")


@cache_app.command("clear")
def clear_command(
    path: Path | None = typer.Option(None, "--path", help=_PATH_HELP),
    model: str | None = typer.Option(None, "--model-name", help="only the entries of this model, by name as "
                                     "`tailor cache stats` lists it"),
    older_than: float | None = duration(None, "--older-than", "age: only entries older than this"),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask for confirmation"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": {removed}"),
) -> None:
    """Delete cached calls (all of them, one model's, or old ones)."""
    from tailorbench import api

    if not yes and not _confirmed("delete the cached calls?"):
        typer.echo("nothing removed", err=True)
        if json_out:
            print_json({"removed": 0})
        return
    with user_errors():
        days = None if older_than is None else older_than / 86400
        removed = api.cache_clear(path, model=model, older_than_days=days).removed
    if json_out:
        print_json({"removed": removed})
    else:
        typer.echo(f"removed {removed} entries", err=True)


def _confirmed(question: str) -> bool:
    """The user's yes; no answer at all (stdin closed) is a no, not an error."""
    try:
        return bool(typer.confirm(question, default=False))
    except typer.Abort:
        return False


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
