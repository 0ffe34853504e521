"""`tailor agree` (agreement statistics of long-format ratings) and `tailor tiers` (agreement tiers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import user_errors
from tailorbench.errors import ConfigError, DataError


def _emit(obj: dict[str, Any], as_json: bool, out: Path | None) -> None:
    text = json.dumps(obj, ensure_ascii=False, indent=2)
    if out is not None:
        from tailorbench.files import write_text_atomic

        with user_errors():
            try:
                write_text_atomic(out, text + "\n")
            except OSError as exc:
                from tailorbench.errors import ConfigError

                raise ConfigError(f"--out {out} cannot be written: {exc.strerror or exc}") from None
    if as_json:
        typer.echo(text)


def agree(
    files: list[Path] = typer.Argument(..., help="Long-format ratings (.jsonl/.csv) or run directories."),
    order: str | None = typer.Option(
        None,
        "--order",
        help="Category order, e.g. ok,unsure,bad (enables weighted kappas and ordinal/interval alpha).",
    ),
    positive: str | None = typer.Option(None, "--positive", help="Positive label for precision/recall/F1."),
    resamples: int = typer.Option(1000, "--resamples", help="Bootstrap resamples over items."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    level: float = typer.Option(0.95, "--level", help="Confidence level of the intervals."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON object on stdout."),
    out: Path | None = typer.Option(None, "--out", help="Also write the JSON object to this file."),
) -> None:
    """Agreement statistics: Fleiss, Cohen (pairwise), Krippendorff, rater vs majority, with bootstrap CIs."""
    from tailorbench.agreement import AgreeOptions, agreement_report, read_ratings
    from tailorbench.options import as_float, as_int, check_writable

    with user_errors():
        as_int("--resamples", resamples, minimum=1)
        as_float("--level", level, minimum=0.0, maximum=1.0, exclusive_minimum=True, exclusive_maximum=True)
        if level >= 1.0:
            raise ConfigError(f"option --level must be a number below 1, got {level!r}")
        if out is not None:
            check_writable("--out", out)
        ratings = read_ratings(files)
        orders = order.split(",") if order else None
        report = agreement_report(ratings, orders, AgreeOptions(resamples, seed, level, positive))
    _emit(report, as_json, out)
    if not as_json:
        from rich.console import Console

        from tailorbench.agreement.report import render_table

        console = Console()
        for table in render_table(report):
            console.print(table)
        for note in report["notes"]:
            console.print(f"note: {note}", markup=False)
        if report["missing_ratings"]:
            console.print(f"missing ratings: {report['missing_ratings']}", markup=False)


def tiers(
    ratings_file: Path = typer.Argument(..., help="Long-format pairwise labels (item = pair id, label A/B)."),
    items: Path = typer.Option(
        ..., "--items", help="Items JSONL: id, split, user_id, persona, question, answer_a, answer_b."
    ),
    out: Path = typer.Option(..., "--out", help="Benchmark JSONL to write (PairCase per line)."),
    easy: float = typer.Option(0.75, "--easy", help="Minimum P_i for the easy tier."),
    medium: float = typer.Option(0.6, "--medium", help="Minimum P_i for the medium tier."),
    min_ratings: int = typer.Option(3, "--min-ratings", help="Items with fewer ratings are skipped."),
    resamples: int = typer.Option(1000, "--resamples"),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = typer.Option(False, "--json", help="Print only the summary JSON on stdout."),
) -> None:
    """Tier pairwise annotations by per-item agreement and write PairCase records."""
    from tailorbench.agreement.ratings import read_ratings
    from tailorbench.agreement.tiers import TierRule, build_tiers, write_cases
    from tailorbench.options import as_float, as_int, check_writable

    with user_errors():
        as_float("--easy", easy, minimum=0.0, maximum=1.0)
        as_float("--medium", medium, minimum=0.0, maximum=1.0)
        rule = TierRule(easy=easy, medium=medium, min_ratings=min_ratings)
        as_int("--resamples", resamples, minimum=1)
        check_writable("--out", out)
        cases, summary = build_tiers(items, read_ratings([ratings_file]), rule, resamples, seed)
        if not cases:
            raise DataError(ratings_file, None, None, "no item has a tier (skipped: " + (", ".join(
                f"{n} {why}" for why, n in summary["skipped_items"].items()) or "none") + f"); {out} not written")
        write_cases(cases, out)
    summary["out"] = str(out)
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False, indent=2))
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
