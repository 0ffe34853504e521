"""Shared pieces of the fuzz suite: derandomized Hypothesis settings (the same inputs on every machine, so CI is
reproducible), a counter of generated inputs, and the check every generated defect must pass.

Every test generates either a valid input, which must load to exactly what it was generated from (the oracle
for "silently wrong"), or a defective one, which carries the file, line and field its error must name.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tailorbench.errors import DataError

#: inputs generated per test, by test name (the suite's total is printed at the end)
GENERATED: Counter[str] = Counter()


def fuzz(examples: int) -> settings:
    """Derandomized settings: fixed inputs, no example database, no deadline (the machine may be loaded)."""
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def count(name: str) -> None:
    GENERATED[name] += 1


@contextmanager
def workdir() -> Iterator[Path]:
    """A fresh directory per generated input (pytest's tmp_path is one per test, not per example)."""
    path = Path(tempfile.mkdtemp(prefix="tb-fuzz-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def expect_error(error: BaseException, path: Path | str, line: int | None, field: str | None) -> None:
    """The error a defect must give: a DataError naming this file, line and field, in its message too."""
    assert isinstance(error, DataError), repr(error)
    assert error.path == str(path), (str(error), path)
    assert error.line == line, (str(error), line)
    assert error.field == field, (str(error), field)
    text = str(error)
    assert (f"{path}:{line}" if line is not None else str(path)) in text
    if field is not None:
        assert f"'{field}'" in text


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if GENERATED:
        total = sum(GENERATED.values())
        terminalreporter.write_line(f"fuzz: {total} generated inputs over {len(GENERATED)} properties")
    from tests.fuzz import test_fuzz_cli

    for line in test_fuzz_cli.summary():
        terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
