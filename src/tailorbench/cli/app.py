"""Entry point of `tailor`. Each verb lives in its own module with a `register(app)` function; modules import
only light dependencies at the top so `tailor --help` stays fast."""

from __future__ import annotations

import importlib

import typer

#: verb modules under tailorbench.cli, registered in this order
_VERBS: tuple[str, ...] = (
    "eval_cmd", "report_cmd", "data_cmd", "agree_cmd", "cache_cmd", "train_cmd", "annotate_cmd", "stages_cmd",
    "build_cmd", "gen_eval_cmd",
)

app = typer.Typer(
    name="tailor",
    help="tailorbench: human-grounded evaluation of LLM personalization.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in _VERBS:
    importlib.import_module(f"tailorbench.cli.{_name}").register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
