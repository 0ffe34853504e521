"""The options the `tailor stages` verbs share, declared once (`stages_cmd.py`, `stages_model_cmd.py`), and the
two ways a stage verb ends: a report printed (and written with `--out X.json`), or a result object printed with
its exit-code-3 rule."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import (
    FILES,
    JSON_HELP,
    MAX_FAILED_HELP,
    N_BOOT_HELP,
    emit,
    exit_if_failed,
    n_boot_value,
    parse_pairs,
    print_json,
    user_errors,
    write_json,
)
from tailorbench.errors import ConfigError
from tailorbench.failures import check_max_failed

stages_app = typer.Typer(
    help="Three-stage human-centered evaluation: extraction (stage 1), relevance (stage 2), incorporation (stage 3).",
    no_args_is_help=True,
)

ITEMS_1 = "Item file of stage 1: index, user_id, attributes, conversations."
ITEMS_2 = "Item file of stage 2: index, user_id, prompt, attributes."
VOTES_OUT = "Votes JSONL to write (Re-Centering model shape)."
N_BOOT = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (over items)")
N_BOOT_HELD_OUT = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (over held-out attributes)")
REPORT_ALIAS = typer.Option(None, "--report", hidden=True, help="old spelling of --out DIR")
VOTES_ALIAS = typer.Option([], "--model", metavar=FILES, hidden=True, help="old spelling of --votes")
SEED = typer.Option(0, "--seed", help="Seed of the bootstrap.")
SPLIT_SEED = typer.Option(0, "--seed", help="Seed of the user split and the bootstrap.")
JSON = typer.Option(False, "--json", help=JSON_HELP)
NAME = typer.Option(None, "--name", help="Name written into the output: the rater's, in the votes (default: the "
                    "spec).")
MODEL_OPTION = typer.Option(None, "--model-option", help="KEY=VALUE for the model backend (repeat).")
MAX_FAILED = typer.Option(None, "--max-failed", help=MAX_FAILED_HELP)
ENCODER = typer.Option(None, "--encoder", help="Encoder path (default: the shipped MiniLM).")
EVAL_FRACTION = typer.Option(0.5, "--eval-fraction", help="Share of users held out for evaluation (split by user).")
L2 = typer.Option(1.0, "--l2", help="L2 penalty of the logistic head (features standardised).")


def files(help: str) -> Any:
    """An option that takes one or more files after the flag (`--human h/*.jsonl`)."""
    return typer.Option([], metavar=FILES, help=help)


def model(help: str) -> Any:
    """`--model` / `-m`: a model spec (the help begins "Model spec")."""
    return typer.Option(..., "--model", "-m", help=help)


def out(help: str) -> Any:
    """`--out` / `-o`: what the verb writes (`help` says what that is)."""
    return typer.Option(..., "--out", "-o", help=f"What the verb writes: {help[:1].lower()}{help[1:]}")


def report_out(stage: str) -> Any:
    """`--out` of an analysis verb: the report directory, or a path ending in .json for the object alone."""
    return typer.Option(None, "--out", "-o", help=f"What the verb writes: a directory for {stage}.md/.html/.json; a "
                                                  "path ending in .json: the JSON object alone, written there.")


def model_options(values: list[str] | None) -> dict[str, Any]:
    """`--model-option KEY=VALUE` pairs (the verb checks them against its model before any work)."""
    return dict(parse_pairs(values, "--model-option"))


def _report_paths(out: Path | None, report_dir: Path | None) -> tuple[Path | None, Path | None]:
    """(JSON file, report directory) of an analysis verb: `--out DIR` is the report directory, `--out X.json`
    the JSON object alone (the earlier form); `--report DIR` is the earlier spelling of `--out DIR`."""
    if out is None or out.suffix.lower() == ".json":
        return out, report_dir
    if report_dir is not None and report_dir != out:
        raise ConfigError(f"--out {out} and --report {report_dir} both name the report directory: give one")
    return None, out


def show_report(stage: str, verb: Callable[..., Any], as_json: bool,
                paths: tuple[Path | None, Path | None] | None = None, **args: Any) -> None:
    """Run an analysis verb of `tailorbench.api.stages` and print its report: the JSON object with --json, else
    the Markdown; `n_resamples=(n_boot, resamples)` is the pair of spellings of --n-boot. `paths`: the verb's
    (--out, --report); `--out DIR` is its report directory, `--out X.json` writes the object there."""
    from tailorbench.api import stages

    with user_errors():
        if isinstance(args.get("n_resamples"), tuple):  # (--n-boot, --resamples): one value, checked here
            args["n_resamples"] = n_boot_value(*args["n_resamples"])
        json_file, report_dir = _report_paths(*paths) if paths is not None else (None, None)
        if json_file is not None:
            from tailorbench.options import check_writable

            check_writable("--out", json_file)
        report = verb(**args, **({"report_dir": report_dir} if report_dir is not None else {}))
        if json_file is not None:
            write_json(json_file, report.to_dict())
    if as_json:
        print_json(report)
    else:
        typer.echo(stages.markdown(stage, report))
    if report_dir is not None:  # where it wrote, on stderr: stdout stays the report
        typer.echo(f"wrote {report_dir / stage}.md, .html and .json", err=True)
    if json_file is not None:
        typer.echo(f"wrote {json_file}", err=True)
    if paths is None and isinstance(args.get("out"), Path):  # a training verb: its model and report there
        typer.echo(f"wrote {args['out']}", err=True)


def run_step(verb_name: str, verb: Callable[..., Any], as_json: bool, max_failed: float | None = None,
             **args: Any) -> Any:
    """Run a step of `tailorbench.api.stages` that writes files, print what it says, exit 3 when its failed model
    calls exceed --max-failed (or all of its calls failed)."""
    from tailorbench.api import stages

    with user_errors():
        check_max_failed(max_failed)
        result = verb(**args)
    emit(result, as_json)
    exit_if_failed([stages.failures(verb_name, result, max_failed)])
    return result
