"""The built-in `personalization` suite from local folders only (`--data-root`; no hub), with one benchmark's data
missing: stopped before any work naming it, or with `--skip-missing` run without it and said so in
leaderboard.md, .json and .html, beside the reason a judge has no figure on a multiple-choice benchmark; figures
in percent with their CI, as every other report shows them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tailorbench as tb
from tailorbench.cli.app import app
from tests.helpers.benchmark_fixtures import suite_data_root

runner = CliRunner()


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    """Every benchmark of the built-in suite under one folder, except PRISM."""
    return suite_data_root(tmp_path / "data")


def test_builtin_suite_offline_with_one_benchmark_missing(tmp_path: Path, data_root: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "suite"
    stopped = runner.invoke(app, ["eval", "--suite", "personalization", "--data-root", str(data_root),
                                  "--out", str(out), "--json"])
    assert stopped.exit_code == 2, stopped.output
    assert "prism" in stopped.output and "--skip-missing" in stopped.output and "Traceback" not in stopped.output
    assert not list(out.rglob("predictions.jsonl"))

    done = runner.invoke(app, ["eval", "--suite", "personalization", "--data-root", str(data_root),
                               "--out", str(out), "--skip-missing", "--json"])
    assert done.exit_code == 0, done.output
    board: dict[str, Any] = json.loads((out / "leaderboard.json").read_text())
    assert board["missing"] == {"prism": f"no data at {(data_root / 'prism').resolve()}"}
    assert set(board["rows"]) == {"longer · persona", "longer · none", "longer · mc"}
    for setting in ("persona", "none"):
        cells = board["rows"][f"longer · {setting}"]
        assert cells["personafeedback"]["n"] > 0 and cells["personalized-rewardbench"]["n"] == 6
        assert str(data_root) in cells["personafeedback"]["run"] or cells["personafeedback"]["run"].startswith(
            str(out))
    assert board["rows"]["longer · mc"] == {"prefeval": None, "personamem": None}
    assert set(board["not_run"]["longer · mc"]) == {"prefeval", "personamem"}
    md = (out / "leaderboard.md").read_text()
    headline, rest = md.split("## Leaderboard", 1)  # the headline opens it; its numbers are the table's
    assert headline.startswith("# Suite personalization\n\n## Headline\n") and "prism: no figure (no data)" in headline
    assert all(n in rest for n in re.findall(r"\d+(?:\.\d+)?", headline))
    assert "| – (no data) |" in md and "prism: skipped, no data at" in md and "llm: judge" in md
    acc = board["rows"]["longer · persona"]["personalized-rewardbench"]["accuracy"]
    assert f"{100 * acc:.1f} [" in md  # percent, one decimal, with the CI
    html = (out / "leaderboard.html").read_text()
    assert "<table" in html and "prism: skipped" in html
    # the PersonaFeedback step read the local folder, not the hub
    manifest = json.loads(next((out / "personafeedback").rglob("manifest.json")).read_text())
    assert "PersonaFeedback" in json.dumps(manifest["config"]["data"])

    # a suite killed before its leaderboard: `tailor eval --resume DIR` (tb.resume) finishes it from suite.json,
    # without the suite's file or its options, and redoes no step
    files = sorted(out.rglob("predictions.jsonl"))
    before = {p: p.read_bytes() for p in files}
    for name in ("leaderboard.json", "leaderboard.md", "leaderboard.html"):
        (out / name).unlink()
    resumed = runner.invoke(app, ["eval", "--resume", str(out), "--json"])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == board == json.loads((out / "leaderboard.json").read_text())
    assert {p: p.read_bytes() for p in files} == before
    again = tb.resume(out)
    assert isinstance(again, tb.SuiteResult) and again.missing == board["missing"]
    gen = runner.invoke(app, ["gen-eval", "--resume", str(out)])
    assert gen.exit_code == 2 and "tailor eval --resume" in gen.output, gen.output
