"""`tailor stages ...`: the three-stage human-centered evaluation (extract, select, incorporate).

The file-list options (`--human`, `--export`, `--votes`, `--predicted`, `--taxonomy`, `--ratings`, `--scores`;
metavar FILE...) take one or more paths each, exactly as a shell glob expands them
(`--human h/*.jsonl --votes m/*.jsonl`; `common.VerbCommand` gives each file its flag). Every verb is a thin
layer over `tailorbench.stages.api`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import (
    FILES,
    JSON_HELP,
    MAX_FAILED_HELP,
    N_BOOT_HELP,
    RESAMPLES_ALIAS,
    emit,
    exit_if_failed,
    n_boot_value,
    parse_pairs,
    print_json,
    user_errors,
    write_json,
)
from tailorbench.failures import FailureCheck, check_max_failed

stages_app = typer.Typer(
    help="Three-stage human-centered evaluation: extraction (stage 1), relevance (stage 2), incorporation (stage 3).",
    no_args_is_help=True,
)
_N_BOOT = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (over items)")
_REPORT_ALIAS = typer.Option(None, "--report", hidden=True, help="old spelling of --out DIR")
_VOTES_ALIAS = typer.Option([], "--model", metavar=FILES, hidden=True, help="old spelling of --votes")


def _files(help: str) -> Any:
    """An option that takes one or more files after the flag (`--human h/*.jsonl`)."""
    return typer.Option([], metavar=FILES, help=help)


def _report_help(stage: str) -> str:
    return (f"Directory for {stage}.md/.html/.json; a path ending in .json: the JSON object alone, written "
            "there.")


def _report_out(out: Path | None, report_dir: Path | None) -> tuple[Path | None, Path | None]:
    """(JSON file, report directory) of an analysis verb: `--out DIR` is the report directory, `--out X.json`
    the JSON object alone (the earlier form); `--report DIR` is the earlier spelling of `--out DIR`."""
    from tailorbench.errors import ConfigError

    if out is None or out.suffix.lower() == ".json":
        return out, report_dir
    if report_dir is not None and report_dir != out:
        raise ConfigError(f"--out {out} and --report {report_dir} both name the report directory: give one")
    return None, out


def _write(report: dict[str, Any], out: Path | None) -> None:
    if out is not None:
        with user_errors():
            write_json(out, report)


@stages_app.command("relevance")
def relevance(
    human: list[Path] = _files("Re-Centering task-3 JSONL, one per annotator."),
    export: list[Path] = _files("The annotation service's ratings.jsonl/.csv of a relevance project (needs --items)."),
    votes: list[Path] = _files("Model vote JSONL (Re-Centering model shape), e.g. from judge-relevance."),
    model_votes: list[Path] = _VOTES_ALIAS,
    min_shared: int = typer.Option(20, "--min-shared", help="Pairs need this many shared items."),
    n_boot: int = _N_BOOT,
    resamples: int | None = RESAMPLES_ALIAS,
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    out: Path | None = typer.Option(None, "--out", help=_report_help("relevance")),
    report_dir: Path | None = _REPORT_ALIAS,
    items: Path | None = typer.Option(None, "--items", help="Stage-2 item file the --export tasks came from."),
) -> None:
    """Stage 2: kappa (human-human, human-model, model-model), share relevant, F1 vs the human majority."""
    from tailorbench.stages import api

    with user_errors():
        from tailorbench.options import as_int

        as_int("--min-shared", min_shared, minimum=1)
        n_boot = n_boot_value(n_boot, resamples)
        out, report_dir = _report_out(out, report_dir)
        _check(out=out, report_dir=report_dir)
        report = api.relevance(human, [*votes, *model_votes], min_shared=min_shared, n_resamples=n_boot,
                               seed=seed, report_dir=report_dir, export=export, items=items)
    _write(report, out)
    if as_json:
        print_json(report)
        return
    from tailorbench.stages.report import relevance_markdown

    typer.echo(relevance_markdown(report))


def _options(values: list[str] | None, model: str | None = None) -> dict[str, Any]:
    """`--model-option KEY=VALUE` pairs; with `model`, checked by building that model (typed and in range, an
    unknown key named) before any work: building opens nothing, the first call does."""
    out: dict[str, Any] = dict(parse_pairs(values, "--model-option"))
    if model is not None:
        from tailorbench.models.backends import make_chat_model

        make_chat_model(model, out)
    return out


def _check(*, out: Path | None = None, out_dir: Path | None = None, report_dir: Path | None = None,
           fraction: tuple[str, float] | None = None, l2: float | None = None,
           threshold: float | None = None) -> None:
    """The numeric options and output paths of a stage verb, checked before anything is read or computed (one
    ConfigError naming the option, exit 2)."""
    from tailorbench.options import as_float, check_writable

    if fraction is not None:
        as_float(fraction[0], fraction[1], minimum=0.0, maximum=1.0, exclusive_minimum=True, exclusive_maximum=True)
    if l2 is not None:
        as_float("--l2", l2, minimum=0.0, exclusive_minimum=True)
    if threshold is not None:
        as_float("--threshold", threshold, minimum=0.0, maximum=1.0)
    if out is not None:
        check_writable("--out", out)
    if out_dir is not None:
        check_writable("--out", out_dir, directory=True)
    if report_dir is not None:
        check_writable("--report", report_dir, directory=True)


def _gen_options(temperature: float, max_tokens: int) -> None:
    from tailorbench.options import as_float, as_int

    as_float("--temperature", temperature, minimum=0.0)
    as_int("--max-tokens", max_tokens, minimum=1)


def call_counts(info: Mapping[str, Any]) -> tuple[int, int]:
    """(failed, calls) of a stage verb's accounting: `failed`/`calls` at the top (judge-relevance, extract,
    categorise, judge-ab), under `generations` (generate), `refine_calls` (verify: ok/invalid/failed), or one
    accounting per step under `calls` (example)."""
    calls = info.get("calls")
    if isinstance(calls, Mapping):
        steps = [call_counts(step) for step in calls.values() if isinstance(step, Mapping)]
        return sum(f for f, _ in steps), sum(n for _, n in steps)
    if isinstance(info.get("generations"), Mapping):
        return call_counts(info["generations"])
    refine = info.get("refine_calls")
    if isinstance(refine, Mapping):
        return int(refine.get("failed", 0)), sum(int(v) for v in refine.values())
    if isinstance(calls, int) and "failed" in info:
        return int(info["failed"]), calls
    return 0, 0


def _exit_if_failed(verb: str, info: Mapping[str, Any], max_failed: float | None) -> None:
    """Exit 3 when the verb's failed model calls exceed --max-failed (or all of its calls failed)."""
    failed, calls = call_counts(info)
    exit_if_failed([FailureCheck(f"stages {verb}", failed, calls, check_max_failed(max_failed), unit="model calls")])


@stages_app.command("baseline")
def baseline(
    items: Path = typer.Option(..., "--items", help="Stage-2 item file: index, user_id, prompt, attributes."),
    human: list[Path] = _files("Re-Centering task-3 JSONL: the human labels that pick the threshold."),
    method: str = typer.Option("bm25", "--method", help="bm25 (over the user's attributes) or embedding."),
    out: Path = typer.Option(..., "--out", help="Votes JSONL to write (Re-Centering model shape)."),
    val_fraction: float = typer.Option(0.5, "--val-fraction", help="Share of users whose labels pick the threshold."),
    seed: int = typer.Option(0, "--seed", help="Seed of the user split."),
    encoder: str | None = typer.Option(None, "--encoder", help="Encoder path (default: the shipped MiniLM)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 2 baseline votes: threshold chosen on validation users, votes for the others."""
    from tailorbench.stages import api

    with user_errors():
        from tailorbench.options import as_choice

        as_choice("--method", method, ("bm25", "embedding"))
        _check(out=out, fraction=("--val-fraction", val_fraction))
        info = api.baseline(items, human, method, out, val_fraction, seed, encoder)
    emit(info, as_json)


@stages_app.command("export-relevance")
def export_relevance(
    items: Path = typer.Option(..., "--items", help="Stage-2 item file: index, user_id, prompt, attributes."),
    out: Path = typer.Option(..., "--out", help="Annotation-service `relevance` task JSONL to write."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 2: relevance tasks for `tailor annotate` (task type `relevance`); read its export back with
    `tailor stages relevance --export ratings.jsonl --items ITEMS`."""
    from tailorbench.stages import api

    with user_errors():
        _check(out=out)
        info = api.export_relevance(items, out)
    emit(info, as_json)


@stages_app.command("generate")
def generate(
    items: Path = typer.Option(..., "--items", help="Stage-2 item file: index, user_id, prompt, attributes."),
    human: list[Path] = _files("Gold attributes: Re-Centering task-3 JSONL."),
    export: list[Path] = _files("Gold attributes: the annotation service's export (same --items)."),
    predicted: list[Path] = _files("Predicted attributes: stage-2 vote JSONL."),
    model: str = typer.Option(..., "--model", help="Generator model spec, e.g. openai:NAME@URL."),
    out: Path = typer.Option(..., "--out", help="Directory for ab_tasks.jsonl, generations.jsonl, generation.json."),
    condition: list[str] | None = typer.Option(None, "--condition",
                                               help="gold | predicted | none (repeat; default: those with inputs)."),
    predictor: str | None = typer.Option(None, "--predictor", help="Rater to use when --predicted holds several."),
    name: str | None = typer.Option(None, "--name", help="Generator name in the tasks (default: the spec)."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Token budget per answer (cut answers are counted)."),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed sent to the backend."),
    generic_template: Path | None = typer.Option(None, "--generic-template", help="Own Jinja template (generic)."),
    personalized_template: Path | None = typer.Option(None, "--personalized-template",
                                                      help="Own Jinja template (personalized)."),
    model_option: list[str] | None = typer.Option(None, "--model-option", help="Backend option KEY=VALUE."),
    max_failed: float | None = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 3: generic + personalized answers given gold, predicted or no attributes -> A/B-rating tasks.

    Gold attributes come from --human or --export, predicted ones from --predicted. Import the tasks into
    `tailor annotate` as task type `ab_rating`; analyse with `tailor stages incorporation --tasks`.
    """
    from tailorbench.stages import api

    with user_errors():
        check_max_failed(max_failed)
        from tailorbench.options import as_choice

        for value in condition or []:
            as_choice("--condition", value, ("gold", "predicted", "none"))
        _gen_options(temperature, max_tokens)
        _check(out_dir=out)
        options = _options(model_option, model)
        info = api.generate(items, model, out, condition or None, human, export, predicted, predictor, name,
                            temperature, max_tokens, seed, generic_template, personalized_template, options)
    emit(info, as_json)
    _exit_if_failed("generate", info, max_failed)


@stages_app.command("judge-relevance")
def judge_relevance(
    items: Path = typer.Option(..., "--items", help="Stage-2 item file: index, user_id, prompt, attributes."),
    model: str = typer.Option(..., "--model", help="Model spec, e.g. openai:gpt-4o-mini or openai:NAME@URL."),
    out: Path = typer.Option(..., "--out", help="Votes JSONL to write (Re-Centering model shape)."),
    name: str | None = typer.Option(None, "--name", help="Rater name in the votes (default: the spec)."),
    model_option: list[str] | None = typer.Option(None, "--model-option", help="Backend option KEY=VALUE."),
    max_failed: float | None = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 2 LLM votes: one YES/NO question per attribute; unparseable answers are counted as invalid."""
    from tailorbench.stages import api

    with user_errors():
        check_max_failed(max_failed)
        _check(out=out)
        info = api.judge_relevance(items, model, out, name, _options(model_option, model))
    emit(info, as_json)
    _exit_if_failed("judge-relevance", info, max_failed)


def _show(stage: str, report: dict[str, Any], as_json: bool, out: Path | None) -> None:
    _write(report, out)
    if as_json:
        print_json(report)
        return
    from tailorbench.stages.report import TITLES, render_markdown, stage_parts

    typer.echo(render_markdown(TITLES[stage], *stage_parts(stage, report)))


@stages_app.command("extraction")
def extraction(
    items: Path = typer.Option(..., "--items", help="Stage-1 item file: index, user_id, attributes, conversations."),
    human: list[Path] = _files("Re-Centering task-1 JSONL."),
    export: list[Path] = _files("Annotation-service exports of an attributes project."),
    taxonomy: list[Path] = _files("Error categories from humans or `tailor stages categorise`."),
    n_boot: int = _N_BOOT,
    resamples: int | None = RESAMPLES_ALIAS,
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    out: Path | None = typer.Option(None, "--out", help=_report_help("extraction")),
    report_dir: Path | None = _REPORT_ALIAS,
) -> None:
    """Stage 1: acceptance / uncertain / rejection rates per extractor and source, agreement, error taxonomy."""
    from tailorbench.stages import api

    with user_errors():
        n_boot = n_boot_value(n_boot, resamples)
        out, report_dir = _report_out(out, report_dir)
        _check(out=out, report_dir=report_dir)
        report = api.extraction(items, human, export, taxonomy, n_boot, seed, report_dir)
    _show("extraction", report, as_json, out)


@stages_app.command("incorporation")
def incorporation(
    tasks: Path = typer.Option(..., "--tasks", help="A/B-rating task JSONL (annotation service import format)."),
    ratings: list[Path] = _files("Long-format ratings: humans' export and judges' ratings, label -2..2."),
    scores: list[Path] = _files("Reward-model or other scores: item, rater, score."),
    n_boot: int = _N_BOOT,
    resamples: int | None = RESAMPLES_ALIAS,
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    out: Path | None = typer.Option(None, "--out", help=_report_help("incorporation")),
    report_dir: Path | None = _REPORT_ALIAS,
) -> None:
    """Stage 3: mean rating, share no better than generic, judge inflation, mention uplift, Spearman/Kendall."""
    from tailorbench.stages import api

    with user_errors():
        n_boot = n_boot_value(n_boot, resamples)
        out, report_dir = _report_out(out, report_dir)
        _check(out=out, report_dir=report_dir)
        report = api.incorporation(tasks, ratings, scores, n_boot, seed, report_dir)
    _show("incorporation", report, as_json, out)


@stages_app.command("extract")
def extract(
    conversations: Path = typer.Option(..., "--conversations", help="JSONL: user_id, conversations, source."),
    model: str = typer.Option(..., "--model", help="Extractor model spec."),
    out: Path = typer.Option(..., "--out", help="Stage-1 item file to write."),
    name: str | None = typer.Option(None, "--name", help="Extractor name (default: the spec)."),
    model_option: list[str] | None = typer.Option(None, "--model-option", help="Backend option KEY=VALUE."),
    max_failed: float | None = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 1: extract attributes with evidence turns; unparseable outputs are counted as invalid."""
    from tailorbench.stages import api

    with user_errors():
        check_max_failed(max_failed)
        _check(out=out)
        info = api.extract(conversations, model, out, name, _options(model_option, model))
    emit(info, as_json)
    _exit_if_failed("extract", info, max_failed)


@stages_app.command("export-tasks")
def export_tasks(
    items: Path = typer.Option(..., "--items", help="Stage-1 item file."),
    out: Path = typer.Option(..., "--out", help="Annotation-service `attributes` task JSONL to write."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 1: attribute-judgment tasks for `tailor annotate` (import with task type `attributes`)."""
    from tailorbench.stages import api

    with user_errors():
        _check(out=out)
        info = api.export_tasks(items, out)
    emit(info, as_json)


@stages_app.command("categorise")
def categorise(
    items: Path = typer.Option(..., "--items", help="Stage-1 item file."),
    human: list[Path] = _files("Re-Centering task-1 JSONL: the human judgments of the attributes."),
    model: str = typer.Option(..., "--model", help="Categoriser model spec."),
    out: Path = typer.Option(..., "--out", help="Taxonomy JSONL to write."),
    name: str | None = typer.Option(None, "--name", help="Categoriser name (default: the spec)."),
    max_failed: float | None = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 1: an LLM's error category for each attribute the human majority rejected."""
    from tailorbench.stages import api

    with user_errors():
        check_max_failed(max_failed)
        _check(out=out)
        _options(None, model)
        info = api.categorise(items, human, model, out, name)
    emit(info, as_json)
    _exit_if_failed("categorise", info, max_failed)


@stages_app.command("judge-ab")
def judge_ab(
    tasks: Path = typer.Option(..., "--tasks", help="A/B-rating task JSONL."),
    model: str = typer.Option(..., "--model", help="Judge model spec."),
    out: Path = typer.Option(..., "--out", help="Long-format ratings to write (group model, label -2..2)."),
    name: str | None = typer.Option(None, "--name", help="Judge name (default: the spec)."),
    model_option: list[str] | None = typer.Option(None, "--model-option", help="Backend option KEY=VALUE."),
    max_failed: float | None = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 3: an LLM judge rates personalized vs generic per attribute (1..5); invalid answers are counted."""
    from tailorbench.stages import api

    with user_errors():
        check_max_failed(max_failed)
        _check(out=out)
        info = api.judge_ab(tasks, model, out, name, _options(model_option, model))
    emit(info, as_json)
    _exit_if_failed("judge-ab", info, max_failed)


@stages_app.command("example")
def example(
    out: Path = typer.Option(..., "--out", help="Directory for the stage reports and the summary."),
    model: str | None = typer.Option(None, "--model", help="Also run this model through every stage."),
    n_boot: int = _N_BOOT,
    resamples: int | None = RESAMPLES_ALIAS,
    seed: int = typer.Option(0, "--seed", help="Seed of bootstraps and the baseline's user split."),
    interventions: bool = typer.Option(True, "--interventions/--no-interventions",
                                       help="Also train and judge the verifier and the relevance classifier."),
    max_failed: float | None = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Run all three stages on the bundled example study (its labels are invented: figures are illustrative)."""
    from tailorbench.stages import api

    with user_errors():
        check_max_failed(max_failed)
        n_boot = n_boot_value(n_boot, resamples)
        _check(out_dir=out)
        if model is not None:
            _options(None, model)
        result = api.run_example(out, model, n_boot, seed, interventions=interventions)
    if as_json:
        print_json(result)
    else:
        typer.echo((out / "summary.md").read_text(encoding="utf-8"))
    _exit_if_failed("example", result, max_failed)


@stages_app.command("summary")
def summary(report_dir: Path = typer.Argument(..., help="Directory holding extraction/relevance/incorporation.json."),
            as_json: bool = typer.Option(False, "--json", help=JSON_HELP + ": the stage reports read")) -> None:
    """Write summary.md / summary.html from the stage reports already in a directory."""
    from tailorbench.stages import api

    with user_errors():
        reports = api.summary(report_dir)
    if as_json:
        print_json(reports)
    else:
        typer.echo((report_dir / "summary.md").read_text(encoding="utf-8"))


@stages_app.command("train-verifier")
def train_verifier(
    items: Path = typer.Option(..., "--items", help="Stage-1 item file: index, user_id, attributes, conversations."),
    human: list[Path] = _files("Re-Centering task-1 JSONL: the human labels."),
    export: list[Path] = _files("Annotation-service exports of an attributes project."),
    out: Path = typer.Option(..., "--out", help="Directory for verifier.npz, held-out predictions and the report."),
    test_fraction: float = typer.Option(0.5, "--test-fraction", help="Share of users held out for evaluation."),
    seed: int = typer.Option(0, "--seed", help="Seed of the user split and the bootstrap."),
    l2: float = typer.Option(1.0, "--l2", help="L2 penalty of the logistic head (features standardised)."),
    threshold: float = typer.Option(0.5, "--threshold", help="Keep an attribute when P(accepted) >= this."),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (over held-out attributes)"),
    resamples: int | None = RESAMPLES_ALIAS,
    encoder: str | None = typer.Option(None, "--encoder", help="Encoder path (default: the shipped MiniLM)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage-1 intervention: train a verifier on human labels (--human / --export), report on held-out users
    how acceptance of the kept attributes compares with all attributes."""
    from tailorbench.stages import api

    with user_errors():
        n_boot = n_boot_value(n_boot, resamples)
        _check(out_dir=out, fraction=("--test-fraction", test_fraction), l2=l2, threshold=threshold)
        report = api.train_verifier(items, out, human, export, test_fraction, seed, l2, threshold, n_boot,
                                    encoder)
    _show("verifier", report, as_json, None)


@stages_app.command("verify")
def verify(
    items: Path = typer.Option(..., "--items", help="Stage-1 item file to verify (e.g. from `tailor stages extract`)."),
    verifier: Path = typer.Option(..., "--verifier", help="verifier.npz from `tailor stages train-verifier`."),
    out: Path = typer.Option(..., "--out", help="Verified stage-1 item file to write."),
    model: str | None = typer.Option(None, "--model", help="Re-ask this extractor for rejected attributes."),
    rounds: int = typer.Option(1, "--rounds", help="Refine rounds (with --model)."),
    name: str | None = typer.Option(None, "--name", help="Extractor name in the output (default: the item's)."),
    template: Path | None = typer.Option(None, "--template", help="Own Jinja template for the refine prompt."),
    encoder: str | None = typer.Option(None, "--encoder", help="Encoder path (default: the verifier's)."),
    model_option: list[str] | None = typer.Option(None, "--model-option", help="Backend option KEY=VALUE."),
    max_failed: float | None = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage-1 verify-and-refine: drop attributes the verifier rejects, or re-ask the extractor (--model)."""
    from tailorbench.stages import api

    with user_errors():
        check_max_failed(max_failed)
        from tailorbench.options import as_int

        as_int("--rounds", rounds, minimum=0)
        _check(out=out)
        options = _options(model_option, model)
        info = api.verify(items, verifier, out, model, rounds, name, template, options, encoder)
    emit(info, as_json)
    _exit_if_failed("verify", info, max_failed)


@stages_app.command("train-relevance")
def train_relevance(
    items: Path = typer.Option(..., "--items", help="Stage-2 item file: index, user_id, prompt, attributes."),
    human: list[Path] = _files("Re-Centering task-3 JSONL: the human labels."),
    export: list[Path] = _files("Annotation-service exports of a relevance project."),
    votes: list[Path] = _files("Model vote JSONL to compare on the held-out users."),
    model_votes: list[Path] = _VOTES_ALIAS,
    out: Path = typer.Option(..., "--out", help="Directory for the classifier, held-out votes and the report."),
    test_fraction: float = typer.Option(0.5, "--test-fraction", help="Share of users held out for evaluation."),
    seed: int = typer.Option(0, "--seed", help="Seed of the user split and the bootstrap."),
    l2: float = typer.Option(1.0, "--l2", help="L2 penalty of the logistic head (features standardised)."),
    threshold: float = typer.Option(0.5, "--threshold", help="Vote relevant when P(relevant) >= this."),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (over held-out attributes)"),
    resamples: int | None = RESAMPLES_ALIAS,
    encoder: str | None = typer.Option(None, "--encoder", help="Encoder path (default: the shipped MiniLM)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage-2 intervention: train a relevance classifier on human labels (--human / --export); on held-out
    users compare F1 and kappa vs the human majority with the cosine baseline and --votes."""
    from tailorbench.stages import api

    with user_errors():
        n_boot = n_boot_value(n_boot, resamples)
        _check(out_dir=out, fraction=("--test-fraction", test_fraction), l2=l2, threshold=threshold)
        report = api.train_relevance(items, out, human, export, [*votes, *model_votes], test_fraction, seed, l2,
                                     threshold, n_boot, encoder)
    _show("relevance_classifier", report, as_json, None)


@stages_app.command("classify-relevance")
def classify_relevance(
    items: Path = typer.Option(..., "--items", help="Stage-2 item file."),
    classifier: Path = typer.Option(..., "--classifier", help="relevance_classifier.npz from train-relevance."),
    out: Path = typer.Option(..., "--out", help="Votes JSONL to write (Re-Centering model shape)."),
    name: str | None = typer.Option(None, "--name", help="Rater name in the votes."),
    encoder: str | None = typer.Option(None, "--encoder", help="Encoder path (default: the classifier's)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stage 2: votes of a trained relevance classifier (for `relevance --votes` or `generate --predicted`)."""
    from tailorbench.stages import api

    with user_errors():
        _check(out=out)
        info = api.classify_relevance(items, classifier, out, name, encoder)
    emit(info, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(stages_app, name="stages")
