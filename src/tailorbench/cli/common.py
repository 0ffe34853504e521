"""Shared CLI plumbing: one error path (clear message, exit code 2), the exit-code-3 rule for failed work,
JSON output on stdout only, and the rag setting's options (shared by `eval` and `gen-eval`). The exit codes
are the table below (`tailor --help`, docs/cli.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import typer

from tailorbench.errors import TailorError
from tailorbench.failures import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, FailureCheck
from tailorbench.redact import redact

T = TypeVar("T")

#: (code, meaning) of every verb, in the order `tailor --help` shows them
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "the work was done"),
    (EXIT_BAD_INPUT, "bad input or configuration (found before any work where it can be)"),
    (EXIT_FAILED, "finished, but failed: calls that never returned a usable answer exceed --max-failed (default "
                  "0), or all failed (invalid verdicts do not count); build run: a stage produced nothing or gave up"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); finished work is kept: tailor eval --resume DIR"),
    (1, "an unexpected error: a bug (see the traceback)"),
)
MAX_FAILED_HELP = ("exit with code 3 when more than this share of calls failed (0.05 = 5%); default 0: any failed "
                   "call; a run where every call failed always exits 3")


def exit_codes_help() -> str:
    """The exit-code table as help text (one paragraph per code, so help formatters keep the lines)."""
    return "Exit codes of every verb:\n\n" + "\n\n".join(f"{code:>3}  {text}" for code, text in EXIT_CODES)


def exit_if_failed(checks: Iterable[FailureCheck]) -> None:
    """Print every check that exceeds its `--max-failed` as `error: ...` and exit 3 if any does (the worst of
    several run directories decides)."""
    failed = [c for c in checks if c.exceeded]
    for check in failed:
        typer.echo(f"error: {check.message()}", err=True)
    if failed:
        raise typer.Exit(EXIT_FAILED)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn TailorError (bad data, bad options) into `error: ...` on stderr and exit code 2."""
    try:
        yield
    except TailorError as exc:
        typer.echo(f"error: {redact(str(exc))}", err=True)
        raise typer.Exit(exc.exit_code) from None


def run_or_exit(fn: Callable[[], T]) -> T:
    with user_errors():
        return fn()
    raise AssertionError("unreachable")


def print_json(payload: Any) -> None:
    """The JSON object alone on stdout (progress and warnings go to stderr)."""
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


def split_csv(values: list[str] | None) -> list[str] | None:
    """`--tier easy,hard --tier medium` -> ['easy', 'hard', 'medium']."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def rag_options(retriever: str | None, top_k: int | None, memory: Path | None) -> dict[str, object]:
    """Options of the rag setting (recorded in the manifest through EvalConfig.setting_options)."""
    out: dict[str, object] = {}
    if retriever is not None:
        out["retriever"] = retriever
    if top_k is not None:
        out["top_k"] = top_k
    if memory is not None:
        out["memory"] = str(memory.resolve())
    return out
