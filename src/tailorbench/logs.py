"""Warnings of the package go through `logging`: one logger per module under `tailorbench`
(`logs.get_logger(__name__)`).

The `tailorbench` logger has one handler of its own, `WarningLines`: each record as `warning: MESSAGE` (the
level's name, lower case) on the stderr of the moment, which is what `tailor` has always printed and what
scripts read. It is a handler like any other: `logging.getLogger("tailorbench").setLevel(logging.ERROR)`
silences the warnings, removing it (`logs.quiet()`) leaves them to the application's own logging
configuration, to which records propagate as usual.
"""

from __future__ import annotations

import logging
import sys

ROOT = "tailorbench"


class WarningLines(logging.Handler):
    """`LEVEL: MESSAGE` lines on `sys.stderr`, looked up per record (so redirected and captured streams get them)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(f"{record.levelname.lower()}: {self.format(record)}\n")
        except Exception:  # a closed stream must not break the work
            self.handleError(record)


def _install() -> logging.Logger:
    logger = logging.getLogger(ROOT)
    if not any(isinstance(h, WarningLines) for h in logger.handlers):
        logger.addHandler(WarningLines(logging.WARNING))
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
