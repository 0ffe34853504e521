"""`tailor train-rm`: Bradley-Terry reward-model training; the checkpoint it writes is a judge (`rm:OUT`)."""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import JSON_HELP, print_json, user_errors
from tailorbench.cli.vocabulary import FIELD_FLAGS


def train_rm_command(config: Path | None, progress: bool, json_out: bool, **fields: Any) -> None:
    """Train a Bradley-Terry reward model on personalized preference pairs.

    Every RMTrainConfig field is a flag (--field-name); flags override the --config YAML, which overrides the
    field defaults."""
    from tailorbench import api

    overrides = {name: _read(name, value) for name, value in fields.items()}
    with user_errors():
        summary = api.train_rm(config, progress=progress, **overrides).to_dict()
    if json_out:
        print_json(summary)
    else:
        typer.echo(f"{done_line(summary)} in {summary['wall_seconds']:.0f} s -> {summary['out']} "
                   f"(judge: rm:{summary['out']})", err=True)


def done_line(summary: dict[str, Any]) -> str:
    """What was trained: encoder steps, or (train_scope features, no steps) the feature-head fit."""
    fit = summary.get("feature_fit")
    if summary["steps"] == 0 and fit:
        return (f"fitted the feature head on {summary['data']['train_pairs']} pairs (training pairwise accuracy "
                f"{100 * fit['train_accuracy']:.1f}%, {fit['seconds']:.0f} s; the encoder is not trained)")
    return f"trained {summary['steps']} steps at {summary['pairs_per_s']:.1f} pairs/s"


def _kind(declared: Any) -> str:
    """A field's declared type as written, without `| None`: `int`, `float`, `str`, `bool`, `list[str]` ..."""
    return str(declared).replace(" ", "").removesuffix("|None")


def _read(name: str, value: Any) -> Any:
    """A flag's value as its field's type: lists are given as text (`--features a,b`, `--ngram-range 1-3`)."""
    kind = _field_kinds()[name]
    if value is None or not kind.startswith("list["):
        return value
    if kind == "list[int]":
        try:
            return [int(part) for part in re.split(r"[-,]", value)]
        except ValueError:
            raise typer.BadParameter(f"--{name.replace('_', '-')} must look like 1-3 (or 1,3), got {value!r}"
                                     ) from None
    return [part.strip() for part in value.split(",") if part.strip()]




def _config_flags() -> list[inspect.Parameter]:
    """One option per RMTrainConfig field, named `--field-name` (or as FIELD_FLAGS says; plus the field's
    `aliases`), documented by the field's `metadata["help"]` and its default, after the flag's meaning where other
    verbs take the flag too (cli/vocabulary.py); None means not given (the YAML or the field's default holds)."""
    from dataclasses import MISSING, fields

    from tailorbench.api.training import RMTrainConfig
    from tailorbench.cli.vocabulary import MEANINGS

    scalars: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool}
    params = []
    for f in fields(RMTrainConfig):
        kind, flag = _kind(f.type), FIELD_FLAGS.get(f.name, "--" + f.name.replace("_", "-"))
        default: Any = f.default_factory() if f.default_factory is not MISSING else f.default
        shown = default
        if isinstance(default, list):
            shown = ("-" if kind == "list[int]" else ",").join(map(str, default))
        text = f.metadata.get("help", "") + ("" if shown in (None, "") else f" (default {shown})")
        meaning = MEANINGS.get(flag, "")
        if not text.lower().startswith(meaning.lower()):
            text = f"{meaning}: {text}"
        decls = [f"{flag}/--no-{flag[2:]}" if kind == "bool" else flag, *f.metadata.get("aliases", ())]
        annotation = scalars.get(kind, str) | None
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                        default=typer.Option(None, *decls, help=text)))
    return params


def _declare(fn: Any) -> Any:
    """`train_rm_command` with its options: --config, one per RMTrainConfig field, --progress and --json."""
    own = [
        inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Path | None, default=typer.Option(
            None, "--config", "-c", help="YAML file of RMTrainConfig fields")),
        *_config_flags(),
        inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=typer.Option(
            True, "--progress/--no-progress", help="progress bar on stderr")),
        inspect.Parameter("json_out", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=typer.Option(
            False, "--json", help=JSON_HELP + ": the summary (OUT/summary.json)")),
    ]
    fn.__signature__ = inspect.Signature(own, return_annotation=None)
    fn.__annotations__ = {p.name: p.annotation for p in own} | {"return": None}
    return fn


@functools.cache
def _field_kinds() -> dict[str, str]:
    from dataclasses import fields

    from tailorbench.api.training import RMTrainConfig

    return {f.name: _kind(f.type) for f in fields(RMTrainConfig)}


def register(app: typer.Typer) -> None:
    app.command("train-rm")(_declare(train_rm_command))
