"""What `tailor eval`, `gen-eval` and `data` share for the benchmarks scored by their own rule (PrefEval,
PersonaMem): the layout options (`--turns`, `--data-option`), and the lines a run's result prints."""

from __future__ import annotations

from typing import Any

import typer

from tailorbench.cli.common import parse_pairs

TURNS_OPTION: Any = typer.Option(
    None, "--turns", help="PrefEval: the filler turns before each question, comma-separated (e.g. 0,10,300); "
                          "the same as --data-option turns=...")
DATA_OPTIONS: Any = typer.Option(
    None, "--data-option", help="KEY=VALUE for the benchmark's layout (repeat): PrefEval turns, forms, topics, seed, "
                                "reminder; PersonaMem contexts, size; PRISM strata; docs/benchmarks.md")


def data_options(turns: str | None, pairs: list[str] | None) -> dict[str, str]:
    """`--data-option KEY=VALUE ...` with `--turns T` as `turns=T` (both giving turns is an error)."""
    from tailorbench.errors import ConfigError

    options = parse_pairs(pairs, "--data-option")
    if turns is not None:
        if "turns" in options:
            raise ConfigError("give the filler turns once: --turns or --data-option turns=..., not both")
        options["turns"] = turns
    return options


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _ci(cell: dict[str, Any]) -> str:
    low, high = cell.get("ci") or (None, None)
    return "" if low is None or high is None else f" [{100 * low:.1f}, {100 * high:.1f}]"


def echo_benchmark_run(result: Any) -> None:
    """A multiple-choice or PrefEval generation run on stderr: overall, then per tier (PrefEval: per filler-turn
    count), the benchmark's own metric with its bootstrap CI."""
    generation = result.kind == "prefeval-generation"
    metric = "preference following" if generation else "accuracy"

    def line(cell: dict[str, Any]) -> str:
        value = cell.get("preference_following_accuracy") if generation else cell.get("accuracy")
        counts = ([] if generation else [f"invalid {cell.get('invalid', 0)}"]) + [f"failed {cell.get('failed', 0)}"]
        return f"{_pct(value if cell.get('n') else None)}{_ci(cell)} on {cell.get('n', 0)} items ({', '.join(counts)})"

    who = f"{result.model} (checks: {result.judge})" if generation else result.model
    typer.echo(f"{who}: {metric} {line(result.overall)} -> {result.run_dir}", err=True)
    for tier, cell in result.by_tier.items():
        typer.echo(f"  {tier}: {line(cell)}", err=True)


def run_label(result: Any) -> str:
    """How a run is named in an exit-code-3 message."""
    kind = getattr(result, "kind", None)
    if kind == "gen-eval":
        return f"gen-eval {result.model} ({result.run_dir})"
    if kind in ("multiple-choice", "prefeval-generation"):
        return f"{result.model} on {result.data} ({result.run_dir})"
    return f"{result.judge} / {result.setting} ({result.run_dir})"
