"""Shared CLI plumbing: one error path (clear message, exit code 2) and JSON output on stdout only."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer

from tailorbench.errors import TailorError

T = TypeVar("T")


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn TailorError (bad data, bad options) into `error: ...` on stderr and exit code 2."""
    try:
        yield
    except TailorError as exc:
        typer.echo(f"error: {exc}", err=True)
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
