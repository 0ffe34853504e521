"""`tailor report` (merge runs into a leaderboard) and `tailor compare` (paired bootstrap of two runs)."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from tailorbench.cli.common import JSON_HELP, N_BOOT_HELP, print_json, user_errors


def report_command(
    runs: list[Path] = typer.Argument(..., help="run directories"),
    out: Path = typer.Option(Path("."), "--out", "-o", help="what the verb writes: report.md and report.html, there"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": the merged results"),
    push: str | None = typer.Option(None, "--push", help="also publish the leaderboard to this hub dataset, "
                                                          "OWNER/NAME (results.jsonl and the report as its card)"),
    private: bool = typer.Option(False, "--private", help="create the hub repository private, with --push (when "
                                                                    "new)"),
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
        kinds = sorted({str(getattr(r, "kind", "") or ("gen-eval" if isinstance(r, api.GenEvalResult) else "pairwise"))
                        for r in results})
        folders = [out] if len(kinds) == 1 else [out / kind for kind in kinds]  # as api.report lays them out
        for folder in folders:
            typer.echo(f"wrote {folder / 'report.md'} and {folder / 'report.html'}")
        typer.echo(f"{len(results)} run{'s' if len(results) != 1 else ''} in the report; browse the cases: "
                   "tailor view " + " ".join(shlex.quote(str(r)) for r in runs))


def compare_command(
    runs: list[Path] = typer.Argument(..., help="run directories (two or more): each is compared with the first"),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (paired, over shared cases)"),
    seed: int = typer.Option(0, "--seed", help="seed of the bootstrap"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Paired comparison of runs on the cases they share, overall and per split x tier: the score difference
    with bootstrap CIs over cases and users, the exact McNemar test, Holm-adjusted for three runs or more."""
    from tailorbench import api
    from tailorbench.api.evaluation import check_compared

    with user_errors():
        check_compared(runs)
        result = api.compare(*runs, n_boot=n_boot, seed=seed).to_dict()
    if json_out:
        print_json(result)
        return
    for line in [*result.get("headline", []), ""]:
        typer.echo(line)
    for comparison in result["comparisons"]:
        typer.echo(f"{comparison['a']} - {comparison['b']}:")
        for c in comparison["cells"]:
            lo, hi = c["ci"]
            users = "" if not c.get("ci_users") else (f", users [{100 * c['ci_users'][0]:+.1f}, "
                                                       f"{100 * c['ci_users'][1]:+.1f}]")
            test = c["mcnemar"]
            p = "–" if test["p"] is None else f"{test['p']:.3g}"
            holm = f", Holm {test['p_holm']:.3g}" if test.get("p_holm") is not None else ""
            typer.echo(f"  {c['cell']:18} {100 * c['difference']:+6.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}]"
                       f"{users} on {c['n']} cases; McNemar {test['a_only']}:{test['b_only']} p={p}{holm}")
    typer.echo("")
    for line in COMPARE_LEGEND:
        typer.echo(line)


#: what `tailor compare`'s cell lines mean, printed under them (docs/metrics.md, "Comparing runs")
COMPARE_LEGEND = (
    "Legend: points = mean over the shared cases of A's case score minus B's, x 100;",
    "  [lo, hi] = its 95% paired percentile bootstrap CI resampling cases; users [lo, hi] = the same resampling",
    "  whole users; McNemar a:b = cases where A's score is higher : cases where B's is; p = the exact two-sided",
    "  McNemar test on them (Holm = adjusted over the comparisons). tailor view, given the same --n-boot and",
    "  --seed, shows the same figures.",
)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
    app.command("compare")(compare_command)
