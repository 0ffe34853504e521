"""Entry point of `tailor`. Each verb lives in its own module with a `register(app)` function; modules import
only light dependencies at the top so `tailor --help` stays fast."""

from __future__ import annotations

import importlib
import sys

import typer

from tailorbench.cli.common import exit_codes_help
from tailorbench.errors import TailorError
from tailorbench.failures import EXIT_INTERRUPTED

#: verb modules under tailorbench.cli, registered in this order
_VERBS: tuple[str, ...] = (
    "eval_cmd", "report_cmd", "data_cmd", "agree_cmd", "cache_cmd", "train_cmd", "annotate_cmd", "stages_cmd",
    "build_cmd", "gen_eval_cmd",
)

app = typer.Typer(
    name="tailor",
    help="tailorbench: human-grounded evaluation of LLM personalization.",
    epilog=exit_codes_help(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in _VERBS:
    importlib.import_module(f"tailorbench.cli.{_name}").register(app)


def main() -> None:
    """`tailor`. The one place that keeps the exit codes true for what escapes a verb: Ctrl-C anywhere is 130,
    a TailorError a verb did not report is 2 with its one-line message."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except TailorError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
