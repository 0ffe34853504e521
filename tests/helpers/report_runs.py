"""Runs whose reports stress the page layout, made through the CLI as a user makes them: the demo with ten
leaderboard rows (five baseline judges x two settings: a chart of ten bars per cell, the shape of `make demo`) and a
PersonaMem-shaped run judged pairwise (long split names that share their first letters, and the benchmark's many
declared tiers: the widest leaderboard); the built-in suite over local folders (its leaderboard.html)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.helpers.benchmark_fixtures import make_personamem, personamem_row, suite_data_root

#: five baseline judges (no model, no network) x two settings = the ten rows of `make demo`
DEMO_JUDGES = ("longer", "shorter", "first", "random", "random:7")
DEMO_SETTINGS = ("persona", "none")


def _eval(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["eval", *args, "--n-boot", "50", "--no-progress"])
    assert result.exit_code == 0, result.output


def demo_runs(out: Path) -> Path:
    """`out` holding the ten demo runs and their merged report.html."""
    args = ["--data", "demo", "--out", str(out)]
    for judge in DEMO_JUDGES:
        args += ["--judge", judge]
    for setting in DEMO_SETTINGS:
        args += ["--setting", setting]
    _eval(args)
    return out


def personamem_run(root: Path) -> Path:
    """A pairwise run over a PersonaMem-shaped questions_32k.csv (24 questions, three question types)."""
    data = make_personamem(root / "data", [personamem_row(n) for n in range(24)])
    out = root / "run"
    _eval(["--data", str(data), "--judge", "first", "--task", "pairwise", "--out", str(out)])
    return out


def suite_run(root: Path) -> Path:
    """The built-in `personalization` suite over local folders (PRISM left out with --skip-missing), judged by the
    five demo baselines: its leaderboard.html has a row per judge x setting and a column per benchmark."""
    data = suite_data_root(root / "data")
    out = root / "suite"
    args = ["--suite", "personalization", "--data-root", str(data), "--skip-missing", "--out", str(out)]
    for judge in DEMO_JUDGES:
        args += ["--judge", judge]
    _eval(args)
    return out
