"""`tailor stages ...` steps that write files: model calls (extract, categorise, judge-relevance, generate,
judge-ab, verify), baselines and classifiers, exports for the annotation service, the bundled example. Each is a
call into `tailorbench.api.stages` (which checks its arguments and the model before any work) printed by
`stages_options.run_step`; `register_steps` adds them to `tailor stages`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import RESAMPLES_ALIAS, n_boot_value, print_json, user_errors
from tailorbench.cli.stages_options import (
    ENCODER,
    ITEMS_2,
    JSON,
    MAX_FAILED,
    MODEL_OPTION,
    N_BOOT,
    NAME,
    VOTES_OUT,
    files,
    model,
    model_options,
    out,
    run_step,
    stages_app,
)


def _stages() -> Any:
    """`tailorbench.api.stages`, imported when a verb runs (so `tailor --help` stays light)."""
    from tailorbench.api import stages

    return stages


def baseline(
    items: Path = typer.Option(..., "--items", help=ITEMS_2),
    human: list[Path] = files("Human annotations: Re-Centering task-3 JSONL, the labels that pick the "
                              "threshold."),
    method: str = typer.Option("bm25", "--method", help="bm25 (over the user's attributes) or embedding."),
    out_file: Path = out(VOTES_OUT),
    eval_fraction: float = typer.Option(0.5, "--eval-fraction", help="Share of users held out for evaluation (split "
                                        "by user): they get votes; the others' labels pick the threshold."),
    val_fraction: float | None = typer.Option(None, "--val-fraction", hidden=True, help="old spelling of "
                                              "--eval-fraction (the others' share: 1 - --eval-fraction)"),
    seed: int = typer.Option(0, "--seed", help="Seed of the user split."),
    encoder: str | None = ENCODER,
    as_json: bool = JSON,
) -> None:
    """Stage 2 baseline votes: threshold chosen on the labels of some users, votes for the held-out others."""
    if val_fraction is None:  # --eval-fraction: the share held out, the complement of the users that fit
        from tailorbench.options import as_float

        with user_errors():
            as_float("--eval-fraction", eval_fraction, minimum=0.0, maximum=1.0, exclusive_minimum=True,
                     exclusive_maximum=True)
        val_fraction = 1 - eval_fraction
    run_step("baseline", _stages().baseline, as_json, items=items, human=human, method=method, out=out_file,
             val_fraction=val_fraction, seed=seed, encoder_path=encoder)


def export_relevance(
    items: Path = typer.Option(..., "--items", help=ITEMS_2),
    out_file: Path = out("Annotation-service `relevance` task JSONL to write."),
    as_json: bool = JSON,
) -> None:
    """Stage 2: relevance tasks for `tailor annotate` (task type `relevance`); read its export back with
    `tailor stages report-relevance --export ratings.jsonl --items ITEMS`."""
    run_step("export-relevance", _stages().export_relevance, as_json, items=items, out=out_file)


def generate(
    items: Path = typer.Option(..., "--items", help=ITEMS_2),
    human: list[Path] = files("Human annotations: gold attributes, Re-Centering task-3 JSONL."),
    export: list[Path] = files("Annotation-service exports: gold attributes (same --items)."),
    predicted: list[Path] = files("Predicted attributes: stage-2 vote JSONL."),
    spec: str = model("Model spec of the generator, e.g. openai:NAME@URL."),
    out_dir: Path = out("Directory for ab_tasks.jsonl, generations.jsonl, generation.json."),
    condition: list[str] | None = typer.Option(None, "--condition",
                                               help="gold | predicted | none (repeat; default: those with inputs)."),
    predictor: str | None = typer.Option(None, "--predictor", help="Rater to use when --predicted holds several."),
    name: str | None = typer.Option(None, "--name", help="Name written into the output: the generator's, in "
                                          "the tasks (default: the spec)."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Token budget per answer (cut answers are counted)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the sampling, sent to the backend."),
    generic_template: Path | None = typer.Option(None, "--generic-template", help="Own Jinja template (generic)."),
    personalized_template: Path | None = typer.Option(None, "--personalized-template",
                                                      help="Own Jinja template (personalized)."),
    model_option: list[str] | None = MODEL_OPTION,
    max_failed: float | None = MAX_FAILED,
    as_json: bool = JSON,
) -> None:
    """Stage 3: generic + personalized answers given gold, predicted or no attributes -> A/B-rating tasks.

    Gold attributes come from --human or --export, predicted ones from --predicted. Import the tasks into
    `tailor annotate` as task type `ab_rating`; analyse with `tailor stages report-incorporation --tasks`.
    """
    run_step("generate", _stages().generate, as_json, max_failed, items=items, model=spec, out=out_dir,
             conditions=condition or None, human=human, export=export, predicted=predicted, predictor=predictor,
             name=name, temperature=temperature, max_tokens=max_tokens, seed=seed,
             generic_template=generic_template, personalized_template=personalized_template,
             options=model_options(model_option))


def judge_relevance(
    items: Path = typer.Option(..., "--items", help=ITEMS_2),
    spec: str = model("Model spec, e.g. openai:gpt-4o-mini or openai:NAME@URL."),
    out_file: Path = out(VOTES_OUT),
    name: str | None = NAME,
    model_option: list[str] | None = MODEL_OPTION,
    max_failed: float | None = MAX_FAILED,
    as_json: bool = JSON,
) -> None:
    """Stage 2 LLM votes: one YES/NO question per attribute; unparseable answers are counted as invalid."""
    run_step("judge-relevance", _stages().judge_relevance, as_json, max_failed, items=items, model=spec,
             out=out_file, name=name, options=model_options(model_option))


def extract(
    conversations: Path = typer.Option(..., "--conversations", help="JSONL: user_id, conversations, source."),
    spec: str = model("Model spec of the extractor."),
    out_file: Path = out("Item file of stage 1."),
    name: str | None = typer.Option(None, "--name", help="Name written into the output: the extractor's "
                                          "(default: the spec)."),
    model_option: list[str] | None = MODEL_OPTION,
    max_failed: float | None = MAX_FAILED,
    as_json: bool = JSON,
) -> None:
    """Stage 1: extract attributes with evidence turns; unparseable outputs are counted as invalid."""
    run_step("extract", _stages().extract, as_json, max_failed, conversations=conversations, model=spec,
             out=out_file, name=name, options=model_options(model_option))


def export_tasks(
    items: Path = typer.Option(..., "--items", help="Item file of stage 1."),
    out_file: Path = out("Annotation-service `attributes` task JSONL to write."),
    as_json: bool = JSON,
) -> None:
    """Stage 1: attribute-judgment tasks for `tailor annotate` (import with task type `attributes`)."""
    run_step("export-tasks", _stages().export_tasks, as_json, items=items, out=out_file)


def categorise(
    items: Path = typer.Option(..., "--items", help="Item file of stage 1."),
    human: list[Path] = files("Human annotations: Re-Centering task-1 JSONL, the judgments of the "
                              "attributes."),
    spec: str = model("Model spec of the categoriser."),
    out_file: Path = out("Taxonomy JSONL to write."),
    name: str | None = typer.Option(None, "--name", help="Name written into the output: the categoriser's "
                                          "(default: the spec)."),
    max_failed: float | None = MAX_FAILED,
    as_json: bool = JSON,
) -> None:
    """Stage 1: an LLM's error category for each attribute the human majority rejected."""
    run_step("categorise", _stages().categorise, as_json, max_failed, items=items, human=human, model=spec,
             out=out_file, name=name)


def judge_ab(
    tasks: Path = typer.Option(..., "--tasks", help="A/B-rating task JSONL."),
    spec: str = model("Model spec of the judge."),
    out_file: Path = out("Long-format ratings to write (group model, label -2..2)."),
    name: str | None = typer.Option(None, "--name", help="Name written into the output: the judge's (default: "
                                          "the spec)."),
    model_option: list[str] | None = MODEL_OPTION,
    max_failed: float | None = MAX_FAILED,
    as_json: bool = JSON,
) -> None:
    """Stage 3: an LLM judge rates personalized vs generic per attribute (1..5); invalid answers are counted."""
    run_step("judge-ab", _stages().judge_ab, as_json, max_failed, tasks=tasks, model=spec, out=out_file,
             name=name, options=model_options(model_option))


def example(
    out_dir: Path = out("Directory for the stage reports and the summary."),
    spec: str | None = typer.Option(None, "--model", "-m", help="Model spec: also run this model through every "
                                             "stage."),
    n_boot: int = N_BOOT,
    resamples: int | None = RESAMPLES_ALIAS,
    seed: int = typer.Option(0, "--seed", help="Seed of bootstraps and the baseline's user split."),
    interventions: bool = typer.Option(True, "--interventions/--no-interventions",
                                       help="Also train and judge the verifier and the relevance classifier."),
    max_failed: float | None = MAX_FAILED,
    as_json: bool = JSON,
) -> None:
    """Run all three stages on the bundled example study (its labels are invented: figures are illustrative)."""
    stages = _stages()
    from tailorbench.cli.common import exit_if_failed, user_errors
    from tailorbench.failures import check_max_failed

    with user_errors():
        check_max_failed(max_failed)
        result = stages.example(out_dir, spec, n_boot_value(n_boot, resamples), seed, interventions=interventions)
    if as_json:
        print_json(result)
    else:
        typer.echo((out_dir / "summary.md").read_text(encoding="utf-8"))
        written = [p for p in out_dir.rglob("*") if p.is_file() and not p.name.startswith(".")]
        typer.echo(f"wrote {len(written)} files to {out_dir}: the summary {out_dir / 'summary.md'} and "
                   f"{out_dir / 'summary.html'}, each stage's report beside them (tailor view {out_dir} shows them)")
    exit_if_failed([stages.failures("example", result, max_failed)])


def verify(
    items: Path = typer.Option(..., "--items",
                               help="Item file of stage 1 to verify (e.g. from `tailor stages extract`)."),
    verifier: Path = typer.Option(..., "--verifier", help="verifier.npz from `tailor stages train-verifier`."),
    out_file: Path = out("The verified item file of stage 1."),
    spec: str | None = typer.Option(None, "--model", "-m", help="Model spec of an extractor to re-ask for "
                                             "rejected attributes."),
    rounds: int = typer.Option(1, "--rounds", help="Refine rounds (with --model)."),
    name: str | None = typer.Option(None, "--name", help="Name written into the output: the extractor's "
                                          "(default: the item's)."),
    template: Path | None = typer.Option(None, "--template", help="Own Jinja template for the refine prompt."),
    encoder: str | None = typer.Option(None, "--encoder", help="Encoder path (default: the verifier's)."),
    model_option: list[str] | None = MODEL_OPTION,
    max_failed: float | None = MAX_FAILED,
    as_json: bool = JSON,
) -> None:
    """Stage-1 verify-and-refine: drop attributes the verifier rejects, or re-ask the extractor (--model)."""
    run_step("verify", _stages().verify, as_json, max_failed, items=items, verifier=verifier, out=out_file,
             model=spec, rounds=rounds, name=name, template=template, options=model_options(model_option),
             encoder_path=encoder)


def classify_relevance(
    items: Path = typer.Option(..., "--items", help="Item file of stage 2."),
    classifier: Path = typer.Option(..., "--classifier", help="relevance_classifier.npz from train-relevance."),
    out_file: Path = out(VOTES_OUT),
    name: str | None = typer.Option(None, "--name", help="Name written into the output: the rater's, in the "
                                          "votes."),
    encoder: str | None = typer.Option(None, "--encoder", help="Encoder path (default: the classifier's)."),
    as_json: bool = JSON,
) -> None:
    """Stage 2: votes of a trained relevance classifier (for `report-relevance --votes` or `generate --predicted`)."""
    run_step("classify-relevance", _stages().classify_relevance, as_json, items=items, classifier=classifier,
             out=out_file, name=name, encoder_path=encoder)


#: `tailor stages NAME` -> the function above
STEPS: dict[str, Callable[..., None]] = {
    "baseline": baseline, "export-relevance": export_relevance, "generate": generate,
    "judge-relevance": judge_relevance, "extract": extract, "export-tasks": export_tasks,
    "categorise": categorise, "judge-ab": judge_ab, "example": example, "verify": verify,
    "classify-relevance": classify_relevance,
}


def register_steps() -> None:
    for name, command in STEPS.items():
        stages_app.command(name)(command)
