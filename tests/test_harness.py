"""The test harness itself (tests/conftest.py): what it sets up for every test, checked where it can go wrong."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

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


def test_the_durations_report_says_how_fast_the_machine_was(tmp_path: Path) -> None:
    """The `machine:` line: the probe before and after, and the cores' busy and steal shares from /proc/stat
    ticks (tests/helpers/machine.py); both files carry it."""
    import json

    from tests.conftest import write_durations
    from tests.helpers import machine

    before = {"busy": 100, "steal": 0, "all": 400}
    after = {"busy": 460, "steal": 10, "all": 800}
    speed = machine.summary(0.061, 0.065, before, after)
    assert speed == {"probe_before_s": 0.061, "probe_after_s": 0.065, "busy_share": 0.9, "steal_share": 0.025}
    assert machine.summary(0.06, 0.06, None, after)["busy_share"] is None
    assert 0 < machine.probe_seconds() < 5
    ticks = machine.cpu_ticks()
    assert ticks is None or ticks["all"] >= ticks["busy"] >= 0
    out = tmp_path / "durations.txt"
    write_durations(out, {"t.py::a": {"seconds": 1.0, "cpu_s": 0.5, "outcome": "passed", "worker": "gw0"}}, 2.0, 0,
                    "2", speed)
    assert ("machine: the probe loop took 0.061 s before the run and 0.065 s after (tests/helpers/machine.py); "
            "cores busy 90 % of the run, steal 2 %") in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["machine"] == speed
