"""`tailor view`: browse run directories (pairwise eval, gen-eval, train-rm's held-out evaluation, stage reports)
in a local page, or write the same as a static site (`--bundle`)."""

from __future__ import annotations

from pathlib import Path

import typer

from tailorbench.cli.common import JSON_HELP, N_BOOT_HELP, print_json, user_errors


def view_command(
    runs: list[Path] = typer.Argument(..., help="run directories (a train-rm output directory: its held-out "
                                                "evaluations)"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on (loopback unless --allow-remote)"),
    port: int = typer.Option(8765, "--port", help="port to listen on (0: any free port)"),
    allow_remote: bool = typer.Option(False, "--allow-remote",
                                      help="allow a --host that is not loopback (everyone who reaches it sees "
                                           "every prompt and answer)"),
    bundle: Path | None = typer.Option(None, "--bundle", help="write the viewer as a static site to this "
                                                             "directory (opens from disk) instead of serving it"),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (the two-run comparison)"),
    seed: int = typer.Option(0, "--seed", help="seed of the two-run comparison's bootstrap"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": where the viewer is and what it shows"),
) -> None:
    """Browse the cases of runs: leaderboard, case browser with filters and search, case pages, two-run
    comparison, users; served on loopback until Ctrl-C, or written with --bundle."""
    from tailorbench import api
    from tailorbench.options import as_int

    with user_errors():
        as_int("--n-boot", n_boot, minimum=1)
        as_int("--port", port, minimum=0, maximum=65535)
        if bundle is not None:
            result = api.view(runs, bundle=bundle, n_boot=n_boot, seed=seed)
        else:
            result = api.view(runs, host=host, port=port, allow_remote=allow_remote, n_boot=n_boot, seed=seed,
                              serve=False)
    if bundle is not None:
        if json_out:
            print_json(result.info())
        else:
            typer.echo(f"bundle: {result.index} (open it in a browser; {len(result.runs)} run(s))")
        return
    if json_out:
        print_json(result.info())
    else:
        typer.echo(f"tailor view: {result.url} ({len(result.runs)} run(s); Ctrl-C stops it)")
    result.serve_forever()


def register(app: typer.Typer) -> None:
    app.command("view")(view_command)
