"""The test harness itself (tests/conftest.py): what it sets up for every test, checked where it can go wrong."""

from __future__ import annotations

import contextlib
import io

from transformers.utils import logging as hf_logging


def test_transformers_logs_reach_the_stderr_of_the_moment() -> None:
    """transformers' handler, made while one capture held stderr, wrote into that closed capture later; logging's
    `--- Logging error ---` traceback then landed in the next CLI run's output (the CLI fuzz walk of `train-rm`
    failed on it in a full run, 2026-12-06)."""
    first = io.StringIO()
    with contextlib.redirect_stderr(first):
        hf_logging.get_logger("transformers.harness").warning("into the first capture")
    first.close()
    second = io.StringIO()
    with contextlib.redirect_stderr(second):
        hf_logging.get_logger("transformers.harness").warning("into the second capture")
    assert second.getvalue().endswith("into the second capture\n"), second.getvalue()
