"""A folder of runs: `tailor report` and `tailor view` take the runs in it (`tailor eval`'s `--out` with several
judges or settings, a suite's folder of benchmarks, a study's folder of stage reports); `tailor compare` and
`--resume`, which continue or compare named runs, refuse it with exit 2, naming the runs it holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tailorbench as tb
from tailorbench.cli.app import app
from tailorbench.run_kinds import runs_in
from tailorbench.viewer.index import expand_runs

runner = CliRunner()
RUNS = ("first__none", "first__persona", "longer__none", "longer__persona")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`tailor eval --judge longer --judge first --setting persona --setting none --out FOLDER` on the demo."""
    out = tmp_path_factory.mktemp("folder") / "x"
    tb.eval("demo", ["longer", "first"], ["persona", "none"], out=out)
    assert sorted(p.name for p in runs_in(out)) == list(RUNS)
    return out


def test_report_takes_the_runs_in_a_folder_and_says_where_it_wrote(folder: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(folder), "--out", str(tmp_path / "board")])
    assert result.exit_code == 0, result.output
    assert f"wrote {tmp_path / 'board' / 'report.md'} and {tmp_path / 'board' / 'report.html'}" in result.stdout
    assert "4 runs in the report" in result.stdout
    assert "# tailorbench leaderboard" not in result.stdout  # the report is in the file, not on the terminal
    board = (tmp_path / "board" / "report.md").read_text(encoding="utf-8")
    assert all(f"| {r.replace('__', ' | ')} | 50.0 [" in board for r in RUNS)


def test_report_and_view_take_a_suite_shaped_folder(folder: Path, tmp_path: Path) -> None:
    """A suite's folder holds BENCHMARK/JUDGE__SETTING (with its leaderboard beside): every run under it."""
    suite = tmp_path / "suite"
    for bench in ("demo", "demo-copy"):
        shutil.copytree(folder, suite / bench, ignore=shutil.ignore_patterns("report.*"))
    (suite / "leaderboard.json").write_text("{}", encoding="utf-8")
    found = runs_in(suite)
    assert [f"{p.parent.name}/{p.name}" for p in found] == [f"{b}/{r}" for b in ("demo", "demo-copy") for r in RUNS]
    result = runner.invoke(app, ["report", str(suite), "--out", str(tmp_path / "board")])
    assert result.exit_code == 0, result.output
    assert "8 runs in the report" in result.stdout
    view = runner.invoke(app, ["view", str(suite), "--bundle", str(tmp_path / "site"), "--json"])
    assert view.exit_code == 0, view.output
    assert len(json.loads(view.stdout)["runs"]) == 8


def test_view_takes_the_runs_in_a_folder(folder: Path, tmp_path: Path) -> None:
    assert expand_runs([folder]) == [folder / r for r in RUNS]
    result = runner.invoke(app, ["view", str(folder), "--bundle", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert f"bundle: {tmp_path / 'site' / 'index.html'}" in result.stdout and "4 run(s)" in result.stdout


def test_a_study_folder_stands_for_its_stage_reports(tmp_path: Path) -> None:
    """A study's folder: its report/ (the copies under steps/ are not counted twice)."""
    study = tmp_path / "study"
    for where in ("report", "steps/report", "steps/relevance.analyse"):
        (study / where).mkdir(parents=True)
        (study / where / "relevance.json").write_text("{}", encoding="utf-8")
    (study / "study.yaml").write_text("name: s\n", encoding="utf-8")
    assert runs_in(study) == [study / "report"]
    assert runs_in(tmp_path) == [study / "report"]  # a study inside a folder of runs: its report/ too
    assert expand_runs([study]) == [study / "report"]
    # `tailor report` / `tailor view` of a real study's folder: tests/study/test_study_report.py


def test_compare_refuses_a_folder_naming_its_runs(folder: Path) -> None:
    for args in ([str(folder)], [str(folder), str(folder / "longer__none")]):
        result = runner.invoke(app, ["compare", *args])
        assert result.exit_code == 2, result.output
        assert f"{folder} is not a run directory but a folder of 4 runs" in result.output
        assert all(str(folder / r) in result.output for r in RUNS), result.output


@pytest.mark.parametrize("verb", ["eval", "gen-eval"])
def test_resume_refuses_a_folder_naming_its_runs(folder: Path, verb: str) -> None:
    result = runner.invoke(app, [verb, "--resume", str(folder)])
    assert result.exit_code == 2, result.output
    assert f"--resume {folder}: not a run directory" in result.output and "holds 4 runs" in result.output
    assert all(r in result.output for r in RUNS), result.output


def test_an_empty_folder_is_still_not_a_run_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for args in (["report", str(tmp_path / "empty"), "--out", str(tmp_path / "b")],
                 ["view", str(tmp_path / "empty"), "--bundle", str(tmp_path / "s")],
                 ["compare", str(tmp_path / "empty"), str(tmp_path / "empty")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "not a run directory" in result.output, (args, result.output)
