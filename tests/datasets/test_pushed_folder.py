"""`--data DIR` reads the folder `tailor data push --dry-run DIR` wrote (its `data/benchmark.jsonl` with the
layout declaration beside it) as the benchmark it holds."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets import load_benchmark


def test_a_dry_run_folder_is_read_as_its_benchmark(tmp_path: Path) -> None:
    runner = CliRunner()
    dry = tmp_path / "dry"
    pushed = runner.invoke(app, ["data", "push", "demo", "me/demo", "--license", "mit", "--dry-run", str(dry)])
    assert pushed.exit_code == 0, pushed.output
    demo, folder = load_benchmark("demo"), load_benchmark(dry)
    assert [c.model_dump() for c in folder.cases] == [c.model_dump() for c in demo.cases]
    assert (folder.splits, folder.tiers) == (demo.splits, demo.tiers)
    run = runner.invoke(app, ["eval", "--data", str(dry), "--judge", "longer", "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
