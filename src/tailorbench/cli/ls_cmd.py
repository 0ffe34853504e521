"""`tailor ls [KIND]`: what is registered (judges, backends, layouts, settings, task types, run kinds, suites,
alignments, ...), plugins included."""

from __future__ import annotations

import typer

from tailorbench.cli.common import JSON_HELP, print_json, user_errors


def ls_command(
    kind: str | None = typer.Argument(None, help="What to list: judges, backends, layouts, settings, task-types, "
                                      "run-kinds, alignments, scorers, batch-apis, reconstructors, suites "
                                      "(default: every kind)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": a list of {kind, group, used_as, parts}"),
) -> None:
    """List what is registered: every name a flag such as --judge, --model, --setting or --task-type takes, with
    where it comes from (builtin, or plugin:DIST for an installed plugin's entry point)."""
    from tailorbench.api.registries import registered

    with user_errors():
        listings = registered(kind)
    if json_out:
        print_json(listings)
        return
    if kind is not None:
        for part in listings[0].parts:
            typer.echo(part.name if part.source == "builtin" else f"{part.name}  ({part.source})")
        return
    for listing in listings:
        names = ", ".join(p.name if p.source == "builtin" else f"{p.name} ({p.source})" for p in listing.parts)
        typer.echo(f"{listing.kind}: {names or '(none)'}")
        typer.echo(f"    {listing.used_as}" + (f"; plugins: entry-point group {listing.group}" if listing.group
                                                 else ""))


def register(app: typer.Typer) -> None:
    app.command("ls")(ls_command)
