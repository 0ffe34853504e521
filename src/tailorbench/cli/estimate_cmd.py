"""`tailor estimate RUN` (human-anchored estimates), `tailor estimate sample` (which cases people label) and
`tailor estimate plan` (how many labels a wanted interval needs). `tailor estimate RUN ...` is short for
`tailor estimate runs RUN ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from tailorbench.cli.common import JSON_HELP, print_json, user_errors

LABELS = typer.Option("benchmark", "--labels", help="People's labels: an annotation export folder (`tailor "
                      "annotate export`), a long-format ratings file (.jsonl/.csv: item = case id, label A = the "
                      "chosen answer, B, chosen or rejected; gen-eval: win/tie/loss or a number), or `benchmark`: "
                      "the benchmark's own labels on the cases of --sample.")
PROXY = typer.Option(None, "--proxy", help="The proxy standing in for people: a second judge's pairwise run on the "
                     "same cases (a gen-eval run's own judge is its proxy).")
VERSUS = typer.Option(None, "--versus", help="A second system's pairwise run: estimate the difference RUN - "
                      "VERSUS on the same cases.")
LEVEL = typer.Option(0.95, "--level", help="Confidence level of the intervals.")


class DefaultGroup(TyperGroup):
    """`tailor estimate RUN ...` runs the `runs` verb: a first word that is not a verb of the group is its RUN."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["runs", *args]
        return super().parse_args(ctx, args)


estimate_app = typer.Typer(cls=DefaultGroup, no_args_is_help=True,
                           help="Human-anchored estimates: a proxy on every case, people on a sample, intervals "
                                "valid whatever the proxy's bias (prediction-powered inference, PPI++). "
                                "`tailor estimate RUN` is `tailor estimate runs RUN`.")


def _show(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    def interval(block: dict[str, Any] | None) -> str:
        if not block:
            return "-"
        lo, hi = block["ci"]
        return f"{block['estimate']:.3f} [{lo:.3f}, {hi:.3f}]"

    table = Table(title=f"{result['estimand']} ({result['design']} sample, {result['level']:.0%} intervals)")
    for col in ("cell", "cases", "labels", "human-only", "proxy-only", "anchored", "labels worth"):
        table.add_column(col)
    for cell in result["cells"]:
        worth = cell.get("effective_labels")
        table.add_row(cell["cell"], str(cell["n_items"]), str(cell["n_labels"]), interval(cell.get("human_only")),
                      interval(cell.get("proxy_only")), interval(cell.get("anchored")),
                      "-" if worth is None else f"{worth:.0f}")
    console = Console()
    console.print(table)
    for note in result.get("notes", []):
        console.print(f"note: {note}", markup=False)


@estimate_app.command("runs")
def runs(
    run: Path = typer.Argument(..., help="The system under test: a pairwise run (its accuracy against people), a "
                               "gen-eval run (the win rate people give) or a judge's ratings file (stage 3, "
                               "`tailor stages judge-ab`: the mean rating people give)."),
    proxy: list[Path] = typer.Option([], "--proxy", help="The proxy standing in for people: a second judge's "
                                     "pairwise run on the same cases (a gen-eval run's own judge is its proxy); "
                                     "repeat for the K fold runs of a proxy cross-fitted on people's labels "
                                     "(crossppi)."),
    labels: str = LABELS,
    sample: Path | None = typer.Option(None, "--sample", help="The sampling plan the labelled cases came from "
                                       "(`tailor estimate sample`'s file): their inclusion probabilities."),
    assume_uniform: bool = typer.Option(False, "--assume-uniform", help="No plan: the labelled cases were a "
                                        "uniform random sample (the report says so)."),
    versus: Path | None = VERSUS,
    level: float = LEVEL,
    check_library: bool = typer.Option(False, "--check-library", help="Recompute the uniform cells with "
                                       "ppi-python (the [estimate] extra) and report the largest difference."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    out: Path | None = typer.Option(None, "--out", "-o", help="What the verb writes: the result object, also to this "
                                    "JSON file (a name "
                                    "ending in .md: a Markdown page with the definitions)."),
) -> None:
    """Human-only, proxy-only and human-anchored (PPI++) estimates per split x tier, each with its interval, and
    the human labels the proxy was worth."""
    from tailorbench import api

    with user_errors():
        result = api.estimate(run, proxy or None, labels, sample, versus, assume_uniform, level, out, check_library)
    if as_json:
        print_json(result)
    else:
        _show(result.to_dict())


@estimate_app.command("sample")
def sample(
    data: str = typer.Option(..., "--data", help="The benchmark whose cases people may label (demo, "
                             "personafeedback, a path in any layout)."),
    out: Path = typer.Option(..., "--out", "-o", help="What the verb writes: the plan, PairCase JSONL (an "
                                  "annotation import)."),
    sampling: str = typer.Option("stratified", "--sampling", help="uniform | stratified (by split x tier) | "
                                 "active (by the proxy's uncertainty; needs --proxy with scores)."),
    size: int | None = typer.Option(None, "--size", help="How many cases to draw (or --share)."),
    share: float | None = typer.Option(None, "--share", help="The share of the cases to draw (or --size)."),
    proxy: Path | None = typer.Option(None, "--proxy", help="The proxy: its pairwise run (active sampling)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample."),
    project: str | None = typer.Option(None, "--project", help="Annotation project to create (pairwise) with "
                                       "the plan imported into it ([web] extra)."),
    n: int = typer.Option(3, "--n", help="Annotators per item of the --project."),
    directory: Path | None = typer.Option(None, "--dir", help="Annotation project directory of --project "
                                          "(default: annotation)."),
    db: str | None = typer.Option(None, "--db", help="Annotation database URL (default: SQLite under --dir)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Draw the cases people should label and write them as an annotation import carrying each case's inclusion
    probability (and, with --project, import them into a new annotation project)."""
    from tailorbench import api

    with user_errors():
        result = api.estimate_sample(data, out, sampling, size, share, proxy, seed, project, n, directory, db)
    if as_json:
        print_json(result)
        return
    info = result.to_dict()
    typer.echo(f"{info['sampled']} of {info['items']} cases ({info['sampling']}) -> {info['out']}"
               + (f", imported into project {info['project']['name']}" if info.get("project") else ""))
    for note in info.get("notes", []):
        typer.echo(f"note: {note}", err=True)


@estimate_app.command("plan")
def plan(
    run: Path = typer.Argument(..., help="The system under test's run (as for `tailor estimate`)."),
    proxy: Path | None = PROXY,
    labels: str = typer.Option(..., "--labels", help="People's labels of the pilot: an annotation export "
                               "folder or a long-format ratings file."),
    half_width: float = typer.Option(0.03, "--half-width", help="The wanted half-width of the interval."),
    level: float = LEVEL,
    cases: int | None = typer.Option(None, "--cases", help="Cases the study will have (default: the run's)."),
    versus: Path | None = VERSUS,
    draws: int = typer.Option(1000, "--draws", help="Simulated draws from the pilot that check each number "
                              "(0: none)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulated draws."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    out: Path | None = typer.Option(None, "--out", "-o", help="What the verb writes: the result object, also to "
                                    "this JSON file."),
) -> None:
    """From a pilot, the human labels a wanted half-width needs: human-only and human-anchored."""
    from tailorbench import api

    with user_errors():
        result = api.estimate_plan(run, proxy, labels, half_width, level, cases, versus, draws, seed, out)
    if as_json:
        print_json(result)
        return
    info = result.to_dict()
    for row in info["rows"]:
        if row["labels"] is None:
            typer.echo(f"{row['estimate']}: not reachable with {info['items']} cases")
            continue
        sim = row.get("simulated_half_width")
        typer.echo(f"{row['estimate']}: {row['labels']} labels for ±{row['half_width']:.4f}"
                   + ("" if sim is None else f" (median over {info['draws']} draws: ±{sim:.4f})"))
    if info.get("alt_test"):
        typer.echo(f"alt-test of the proxy, power over {info['alt_draws']} simulated pilots per cell:")
        for row in info["alt_test"]:
            cells = ", ".join(f"{m} items {p:.0%}" for m, p in row["power"].items())
            need = row["items_needed"]
            typer.echo(f"  epsilon {row['epsilon']}: {cells}; "
                       + (f"80% power from {need} items" if need else "under 80% power at every size tried"))
    for note in info.get("notes", []):
        typer.echo(f"note: {note}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(estimate_app, name="estimate")
