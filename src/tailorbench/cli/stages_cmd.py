"""`tailor stages ...`: the three-stage human-centered evaluation (extract, select, incorporate).

`--human` and `--model` take one or more paths each, exactly as a shell glob expands them
(`--human h/*.jsonl --model m/*.jsonl`); click options take one value, so these two are read from the extra
arguments in order. Every verb is a thin layer over `tailorbench.stages.api`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import print_json, user_errors

stages_app = typer.Typer(
    help="Three-stage human-centered evaluation: extraction (stage 1), relevance (stage 2), incorporation (stage 3).",
    no_args_is_help=True,
)
_MULTI = {"allow_extra_args": True, "ignore_unknown_options": True}


def parse_multi(args: list[str], names: tuple[str, ...]) -> dict[str, list[Path]]:
    """`--human a b --model c` -> {"human": [a, b], "model": [c]}; `--human=a` works too; stray tokens are errors."""
    from tailorbench.errors import ConfigError

    out: dict[str, list[Path]] = {n: [] for n in names}
    current: str | None = None
    for token in args:
        if token.startswith("--"):
            flag, eq, value = token[2:].partition("=")
            if flag not in out:
                raise ConfigError(f"unknown option --{flag}")
            current = flag
            if eq:
                out[flag].append(Path(value))
            continue
        if current is None:
            raise ConfigError(f"unexpected argument {token!r}: give files after --{' or --'.join(names)}")
        out[current].append(Path(token))
    return out


def _write(report: dict[str, Any], out: Path | None) -> None:
    if out is not None:
        import json

        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


@stages_app.command("relevance", context_settings=_MULTI)
def relevance(
    ctx: typer.Context,
    min_shared: int = typer.Option(20, "--min-shared", help="Pairs need this many shared items."),
    resamples: int = typer.Option(1000, "--resamples", help="Bootstrap resamples over items."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON object on stdout."),
    out: Path | None = typer.Option(None, "--out", help="Also write the JSON object to this file."),
    report_dir: Path | None = typer.Option(None, "--report", help="Write report.md and report.html here."),
) -> None:
    """Stage 2: kappa (human-human, human-model, model-model), share relevant, F1 vs the human majority.

    Inputs: --human FILE... (Re-Centering task-3 JSONL, one per annotator) and --model FILE... (model vote JSONL,
    one per model).
    """
    from tailorbench.stages import api

    with user_errors():
        files = parse_multi(list(ctx.args), ("human", "model"))
        if not files["human"]:
            from tailorbench.errors import ConfigError

            raise ConfigError("give at least one --human file")
        report = api.relevance(files["human"], files["model"], min_shared=min_shared, n_resamples=resamples,
                               seed=seed, report_dir=report_dir)
    _write(report, out)
    if as_json:
        print_json(report)
        return
    from tailorbench.stages.report import relevance_markdown

    typer.echo(relevance_markdown(report))


def register(app: typer.Typer) -> None:
    app.add_typer(stages_app, name="stages")
