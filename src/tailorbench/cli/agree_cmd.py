"""`tailor agree` (agreement statistics of long-format ratings) and `tailor tiers` (agreement tiers)."""

from __future__ import annotations

from pathlib import Path

import typer

from tailorbench.cli.common import (
    JSON_HELP,
    N_BOOT_HELP,
    RESAMPLES_ALIAS,
    n_boot_value,
    print_json,
    user_errors,
)

#: `--map` of every verb that reads a tool's export (docs/interop.md, "Projects tailorbench did not make")
MAP = typer.Option(None, "--map", help="A project tailorbench did not make: where its export keeps the item, "
                   "rater, question and answers, e.g. item=data.pair_id,a=data.answer_a,b=data.answer_b "
                   "(or a YAML file); without it the common shapes are detected.")


def agree(
    files: list[Path] = typer.Argument(..., help="Long-format ratings (.jsonl/.csv), run directories, or Label "
                                       "Studio, Argilla or Potato exports."),
    order: str | None = typer.Option(
        None,
        "--label-order",
        help="Category order, e.g. ok,unsure,bad (enables weighted kappas and ordinal/interval alpha).",
    ),
    positive: str | None = typer.Option(None, "--positive", help="Positive label for precision/recall/F1."),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (over items)"),
    resamples: int | None = RESAMPLES_ALIAS,
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    level: float = typer.Option(0.95, "--level", help="Confidence level of the intervals."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    out: Path | None = typer.Option(None, "--out", "-o", help="What the verb writes: the result object, also to this "
                                                              "JSON file."),
    fmt: str = typer.Option("auto", "--input-format", help="Format of the files read: auto (each file detected: a "
                                                           "Label Studio, Argilla or Potato export, else the long "
                                                           "format) | long | label-studio | argilla | potato."),
    mapping: str | None = MAP,
    judges: list[str] = typer.Option([], "--rater", help="A rater to test as a judge against the humans (repeat "
                                     "for several); raters outside the human group, e.g. a run directory's, are "
                                     "judges anyway."),
    annotators: str | None = typer.Option(None, "--annotators", help="Who the humans are, setting the alt-test "
                                          "margin the authors advise: expert (epsilon 0.2) | skilled (0.15) | "
                                          "crowd (0.1)."),
    epsilon: float | None = typer.Option(None, "--epsilon", help="Alt-test cost-benefit margin epsilon as a "
                                         "number (default 0.2, the authors' default and their advice for "
                                         "experts; skilled annotators 0.15, crowd workers 0.1: see --annotators)."),
    min_items: int = typer.Option(30, "--min-items", help="Alt-test: a human is tested only with this many items "
                                  "shared with the judge and another human."),
    min_humans: int = typer.Option(2, "--min-humans", help="Alt-test: an item counts only when at least this many "
                                   "humans rated it (the authors' min_humans_per_instance; at least 2)."),
    alignment: str = typer.Option("auto", "--alignment", help="Alt-test alignment score: accuracy | neg-rmse | "
                                  "auto (neg-rmse with --label-order, accuracy for string labels; integer labels must "
                                  "declare their scale) | a function registered in the entry-point group "
                                  "tailorbench.alignments."),
    tiers_file: Path | None = typer.Option(None, "--tier-file", help="JSONL with id and tier per line (e.g. the "
                                           "benchmark `tailor tiers` wrote): admissibility per tier too."),
    expert: str | None = typer.Option(None, "--expert", help="A human rater whose labels are the truth (e.g. "
                                      "first-person in an arena's export): each judge also gets the alt-test's "
                                      "single-expert variant against every other human."),
) -> None:
    """Agreement statistics: Fleiss, Cohen (pairwise), Krippendorff, rater vs majority, with bootstrap CIs; each
    judge's human admissibility (alternative-annotator test, kappas beside the humans')."""
    from tailorbench import api

    with user_errors():
        report = api.agree(files, order.split(",") if order else None, positive, n_boot_value(n_boot, resamples),
                           seed, level, out, fmt, mapping, judges, epsilon, min_items, alignment,
                           tiers_file, annotators, min_humans, expert).to_dict()
    if as_json:
        print_json(report)
    else:
        from rich.console import Console

        from tailorbench.api.agreement import render_tables

        console = Console()
        for table in render_tables(report):
            console.print(table)
        for note in report["notes"]:
            console.print(f"note: {note}", markup=False)
        if report["missing_ratings"]:
            console.print(f"missing ratings: {report['missing_ratings']}", markup=False)


def tiers(
    ratings_file: Path = typer.Argument(..., help="Long-format pairwise labels (item = pair id, label A/B), or a "
                                        "Label Studio, Argilla or Potato export of a pairwise project."),
    items: Path = typer.Option(
        ..., "--items", help="Item file: id, split, user_id, persona, question, answer_a, answer_b."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="What the verb writes: the benchmark JSONL (PairCase per line)."),
    easy: float = typer.Option(0.75, "--easy", help="Tiering: minimum P_i for the easy tier."),
    medium: float = typer.Option(0.6, "--medium", help="Tiering: minimum P_i for the medium tier."),
    min_ratings: int = typer.Option(3, "--min-ratings", help="Tiering: ratings an item needs (items with fewer are "
                                                             "skipped)."),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (over items, per tier)"),
    resamples: int | None = RESAMPLES_ALIAS,
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP + ": the summary"),
    fmt: str = typer.Option("auto", "--input-format", help="Format of the files read: auto (each file detected: a "
                                                           "Label Studio, Argilla or Potato export, else the long "
                                                           "format) | long | label-studio | argilla | potato."),
    mapping: str | None = MAP,
) -> None:
    """Tier pairwise annotations by per-item agreement and write PairCase records."""
    from tailorbench import api

    with user_errors():
        summary = api.tiers(ratings_file, items, out, easy, medium, min_ratings, n_boot_value(n_boot, resamples),
                            seed, fmt, mapping).to_dict()
    if as_json:
        print_json(summary)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Tiers written to {out}")
    for col in ("tier", "cases", "percent agreement", "Fleiss' kappa [CI]"):
        table.add_column(col)
    for tier, s in summary["tiers"].items():
        if not s["n"]:
            table.add_row(tier, "0", "-", "-")
            continue
        k = s["fleiss_kappa"]
        kap = "undefined" if k["value"] is None else f"{k['value']:.3f} [{k['ci'][0]:.3f}, {k['ci'][1]:.3f}]"
        table.add_row(tier, str(s["n"]), f"{s['percent_agreement']:.3f}", kap)
    console = Console()
    console.print(table)
    console.print(
        f"skipped items: {summary['skipped_items'] or 'none'}; ratings for unknown items: "
        f"{summary['ratings_for_unknown_items']}",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command("agree")(agree)
    app.command("tiers")(tiers)
