"""Warnings of the package go through `logging`: one logger per module under `tailorbench`
(`logs.get_logger(__name__)`).

The `tailorbench` logger has one handler of its own, `WarningLines`: each warning as `warning: MESSAGE` (the
level's name, lower case) on the stderr of the moment, which is what `tailor` has always printed and what
scripts read; an INFO record (a note: how a resumed run ended before, the command that resumes an interrupted
one) as its message alone. The logger's level is WARNING in Python (notes are silent, as a library's should be;
`logging.getLogger("tailorbench").setLevel(logging.INFO)` shows them) and INFO under `tailor` (`showing_notes`).
It is a handler like any other: `logging.getLogger("tailorbench").setLevel(logging.ERROR)` silences the
warnings, removing it (`logs.quiet()`) leaves them to the application's own logging configuration, to which
records propagate as usual.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

ROOT = "tailorbench"


class WarningLines(logging.Handler):
    """`LEVEL: MESSAGE` lines on `sys.stderr` (notes: `MESSAGE`), the stream looked up per record (so redirected
    and captured streams get them)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            prefix = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
            sys.stderr.write(f"{prefix}{self.format(record)}\n")
        except Exception:  # a closed stream must not break the work
            self.handleError(record)


def _install() -> logging.Logger:
    logger = logging.getLogger(ROOT)
    if not any(isinstance(h, WarningLines) for h in logger.handlers):
        logger.addHandler(WarningLines())
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)
    return logger


def get_logger(name: str) -> logging.Logger:
    """The logger of module `name` (a child of `tailorbench`, whose handler prints it)."""
    _install()
    return logging.getLogger(name)


def quiet() -> None:
    """Remove the package's own handler: warnings then reach only the handlers the application configured."""
    logger = logging.getLogger(ROOT)
    for handler in [h for h in logger.handlers if isinstance(h, WarningLines)]:
        logger.removeHandler(handler)


@contextmanager
def showing_notes() -> Iterator[None]:
    """INFO records (notes) through the package's logger while a `tailor` verb runs; the level the logger had
    (WARNING, or what the application set) comes back afterwards."""
    logger = _install()
    before = logger.level
    logger.setLevel(min(before, logging.INFO))
    try:
        yield
    finally:
        logger.setLevel(before)
