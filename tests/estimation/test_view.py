"""`tailor view` shows an estimate file (`tailor estimate --out FILE.json`, the `estimate` run kind) beside the
runs it was computed from: its three estimates per cell, a cell without an anchored estimate as '-' with its
note; a page without an estimate shows none; a .json file that is no estimate is exit 2 naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.estimation.records import EstimateReport

runner = CliRunner()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("estimate_view")
    for judge in ("longer", "shorter"):
        api.eval("demo", judge=judge, out=root / judge, n_boot=20)
    plan = root / "plan.jsonl"
    assert runner.invoke(app, ["estimate", "sample", "--data", "demo", "--sampling", "uniform", "--size", "3",
                               "--out", str(plan), "--seed", "1"]).exit_code == 0
    out = root / "estimate.json"
    res = runner.invoke(app, ["estimate", str(root / "longer"), "--proxy", str(root / "shorter"), "--labels",
                              "benchmark", "--sample", str(plan), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return {"longer": root / "longer", "shorter": root / "shorter", "estimate": out}


def test_the_viewer_shows_an_estimate_beside_its_runs(made: dict[str, Path], tmp_path: Path) -> None:
    report = EstimateReport.read(made["estimate"])
    assert isinstance(report, EstimateReport)
    res = runner.invoke(app, ["view", str(made["longer"]), str(made["estimate"]), "--bundle", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "b" / "index.html").read_text()
    assert "Human-anchored estimate: accuracy of the system against people" in page
    assert "human-only" in page and "proxy-only" in page and "labels worth" in page
    every = next(c for c in report.cells if c.cell == "all")
    assert f"{every.proxy_only.estimate:.3f}" in page
    # three labels over many cells: a cell without one has no anchored estimate, shown as '-' with its note
    empty = [c for c in report.cells if c.anchored is None]
    assert empty and all(c.note for c in empty)
    assert "an anchored estimate needs at least 2" in page
    assert (made["estimate"].parent / "estimate.json").read_text()  # the estimate file is only read
    assert not (made["estimate"].parent / ".view-index.json").exists()


def test_a_page_without_an_estimate_shows_none(made: dict[str, Path], tmp_path: Path) -> None:
    res = runner.invoke(app, ["view", str(made["longer"]), "--bundle", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "Human-anchored estimate" not in (tmp_path / "b" / "index.html").read_text()


def test_a_json_file_that_is_no_estimate_is_exit_2_naming_the_field(made: dict[str, Path], tmp_path: Path) -> None:
    data = json.loads(made["estimate"].read_text())
    data["cells"] = "none"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    res = runner.invoke(app, ["view", str(bad), "--bundle", str(tmp_path / "b")])
    assert res.exit_code == 2, res.output
    assert "bad.json" in res.output and "cells" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "b").exists()
