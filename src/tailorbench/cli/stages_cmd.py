"""`tailor stages ...`: the three-stage human-centered evaluation (extract, select, incorporate); the analyses
(`report-extraction`, `report-relevance`, `report-incorporation`, `summary`) and the trained interventions here,
the model steps (`extract`, `judge-relevance`, ...) in `stages_model_cmd.py`. The analyses' old names
(`extraction`, `relevance`, `incorporation`) still work, hidden from `--help`.

The file-list options (`--human`, `--export`, `--votes`, `--predicted`, `--taxonomy`, `--ratings`, `--scores`;
metavar FILE...) take one or more paths each, exactly as a shell glob expands them
(`--human h/*.jsonl --votes m/*.jsonl`; `common.VerbCommand` gives each file its flag). Every verb is a call
into `tailorbench.api.stages`, which checks its arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tailorbench.cli import stages_model_cmd
from tailorbench.cli.common import JSON_HELP, RESAMPLES_ALIAS, print_json, user_errors
from tailorbench.cli.stages_options import (
    ENCODER,
    EVAL_FRACTION,
    ITEMS_1,
    ITEMS_2,
    JSON,
    L2,
    N_BOOT,
    N_BOOT_HELD_OUT,
    REPORT_ALIAS,
    SEED,
    SPLIT_SEED,
    VOTES_ALIAS,
    files,
    out,
    report_out,
    show_report,
    stages_app,
)


def _api() -> Any:
    """`tailorbench.api.stages`, imported when a verb runs (so `tailor --help` stays light)."""
    from tailorbench.api import stages

    return stages


@stages_app.command("relevance", hidden=True)  # the old name, one release (CHANGELOG.md)
@stages_app.command("report-relevance")
def relevance(
    human: list[Path] = files("Human annotations: Re-Centering task-3 JSONL, one per annotator."),
    export: list[Path] = files("Annotation-service exports: ratings.jsonl/.csv of a relevance project (needs "
                              "--items)."),
    votes: list[Path] = files("Model vote JSONL (Re-Centering model shape), e.g. from judge-relevance."),
    model_votes: list[Path] = VOTES_ALIAS,
    min_shared: int = typer.Option(20, "--min-shared", help="Pairs need this many shared items."),
    n_boot: int = N_BOOT, resamples: int | None = RESAMPLES_ALIAS, seed: int = SEED, as_json: bool = JSON,
    out: Path | None = report_out("relevance"),
    report_dir: Path | None = REPORT_ALIAS,
    items: Path | None = typer.Option(None, "--items", help="Item file of stage 2 the --export tasks came from."),
    annotators: str | None = typer.Option(None, "--annotators", help="Who the humans are, setting the alt-test "
                                          "margin the authors advise: expert (epsilon 0.2) | skilled (0.15) | "
                                          "crowd (0.1)."),
    epsilon: float | None = typer.Option(None, "--epsilon", help="Alt-test cost-benefit margin epsilon as a "
                                         "number (default 0.2, the authors' advice for experts; skilled "
                                         "annotators 0.15, crowd workers 0.1: see --annotators)."),
    min_items: int = typer.Option(30, "--min-items", help="Alt-test: a human is tested only with this many "
                                  "items shared with the model and another human."),
) -> None:
    """Stage 2: kappa (human-human, human-model, model-model), share relevant, F1 vs the human majority, and
    each model's human admissibility (alternative-annotator test)."""
    show_report("relevance", _api().report_relevance, as_json, (out, report_dir), human=human,
                model=[*votes, *model_votes], min_shared=min_shared, n_resamples=(n_boot, resamples),
                seed=seed, export=export, items=items, epsilon=epsilon, min_items=min_items,
                annotators=annotators)


@stages_app.command("extraction", hidden=True)  # the old name, one release (CHANGELOG.md)
@stages_app.command("report-extraction")
def extraction(
    items: Path = typer.Option(..., "--items", help=ITEMS_1),
    human: list[Path] = files("Human annotations: Re-Centering task-1 JSONL."),
    export: list[Path] = files("Annotation-service exports of an attributes project."),
    taxonomy: list[Path] = files("Error categories from humans or `tailor stages categorise`."),
    n_boot: int = N_BOOT, resamples: int | None = RESAMPLES_ALIAS, seed: int = SEED, as_json: bool = JSON,
    out: Path | None = report_out("extraction"),
    report_dir: Path | None = REPORT_ALIAS,
) -> None:
    """Stage 1: acceptance / uncertain / rejection rates per extractor and source, agreement, error taxonomy."""
    show_report("extraction", _api().report_extraction, as_json, (out, report_dir), items=items, human=human,
                export=export, taxonomy=taxonomy, n_resamples=(n_boot, resamples), seed=seed)


@stages_app.command("incorporation", hidden=True)  # the old name, one release (CHANGELOG.md)
@stages_app.command("report-incorporation")
def incorporation(
    tasks: Path = typer.Option(..., "--tasks", help="A/B-rating task JSONL (annotation service import format)."),
    ratings: list[Path] = files("Long-format ratings: humans' export and judges' ratings, label -2..2."),
    scores: list[Path] = files("Reward-model or other scores: item, rater, score."),
    n_boot: int = N_BOOT, resamples: int | None = RESAMPLES_ALIAS, seed: int = SEED, as_json: bool = JSON,
    out: Path | None = report_out("incorporation"),
    report_dir: Path | None = REPORT_ALIAS,
) -> None:
    """Stage 3: mean rating, share no better than generic, judge inflation, mention uplift, Spearman/Kendall."""
    show_report("incorporation", _api().report_incorporation, as_json, (out, report_dir), tasks=tasks, ratings=ratings,
                scores=scores, n_resamples=(n_boot, resamples), seed=seed)


@stages_app.command("summary")
def summary(report_dir: Path = typer.Argument(..., help="Directory holding extraction/relevance/incorporation.json."),
            as_json: bool = typer.Option(False, "--json", help=JSON_HELP + ": the stage reports read")) -> None:
    """Write summary.md / summary.html from the stage reports already in a directory."""
    with user_errors():
        reports = _api().summary(report_dir)
    if as_json:
        print_json(reports)
    else:
        typer.echo((report_dir / "summary.md").read_text(encoding="utf-8"))


@stages_app.command("train-verifier")
def train_verifier(
    items: Path = typer.Option(..., "--items", help=ITEMS_1),
    human: list[Path] = files("Human annotations: Re-Centering task-1 JSONL, the labels."),
    export: list[Path] = files("Annotation-service exports of an attributes project."),
    out_dir: Path = out("Directory for verifier.npz, held-out predictions and the report."),
    eval_fraction: float = EVAL_FRACTION, seed: int = SPLIT_SEED, l2: float = L2,
    threshold: float = typer.Option(0.5, "--threshold", help="Decision threshold: keep an attribute when P(accepted) "
                                                             ">= this."),
    n_boot: int = N_BOOT_HELD_OUT, resamples: int | None = RESAMPLES_ALIAS, encoder: str | None = ENCODER,
    as_json: bool = JSON,
) -> None:
    """Stage-1 intervention: train a verifier on human labels (--human / --export), report on held-out users
    how acceptance of the kept attributes compares with all attributes."""
    show_report("verifier", _api().train_verifier, as_json, items=items, out=out_dir, human=human, export=export,
                test_fraction=eval_fraction, seed=seed, l2=l2, threshold=threshold,
                n_resamples=(n_boot, resamples), encoder_path=encoder)


@stages_app.command("train-relevance")
def train_relevance(
    items: Path = typer.Option(..., "--items", help=ITEMS_2),
    human: list[Path] = files("Human annotations: Re-Centering task-3 JSONL, the labels."),
    export: list[Path] = files("Annotation-service exports of a relevance project."),
    votes: list[Path] = files("Model vote JSONL to compare on the held-out users."),
    model_votes: list[Path] = VOTES_ALIAS,
    out_dir: Path = out("Directory for the classifier, held-out votes and the report."),
    eval_fraction: float = EVAL_FRACTION, seed: int = SPLIT_SEED, l2: float = L2,
    threshold: float = typer.Option(0.5, "--threshold", help="Decision threshold: vote relevant when P(relevant) >= "
                                                             "this."),
    n_boot: int = N_BOOT_HELD_OUT, resamples: int | None = RESAMPLES_ALIAS, encoder: str | None = ENCODER,
    as_json: bool = JSON,
) -> None:
    """Stage-2 intervention: train a relevance classifier on human labels (--human / --export); on held-out
    users compare F1 and kappa vs the human majority with the cosine baseline and --votes."""
    show_report("relevance_classifier", _api().train_relevance, as_json, items=items, out=out_dir, human=human,
                export=export, model=[*votes, *model_votes], test_fraction=eval_fraction, seed=seed, l2=l2,
                threshold=threshold, n_resamples=(n_boot, resamples), encoder_path=encoder)


def register(app: typer.Typer) -> None:
    stages_model_cmd.register_steps()
    app.add_typer(stages_app, name="stages")
