"""`tailor` end to end on fixtures with every PersonaFeedback quirk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.helpers.pf_data import make_hub, make_mirror

runner = CliRunner()


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_eval_matrix_on_hub_layout(tmp_path: Path) -> None:
    data = make_hub(tmp_path / "hub")
    out = tmp_path / "runs"
    stdout = _ok(["eval", "--data", str(data), "--judge", "longer", "--judge", "random:3", "--setting", "persona",
                  "--setting", "none", "--out", str(out), "--n-boot", "200", "--json", "--no-progress"])
    results = json.loads(stdout)  # stdout holds only the JSON
    assert len(results) == 4
    for name in ("longer__persona", "longer__none", "random_3__persona", "random_3__none"):
        assert (out / name / "results.json").exists()
    for name in ("report.md", "report.html"):
        assert (out / name).exists()
    first = results[0]
    assert set(first["metrics"]) == {"general", "specific", "all"}
    cell = first["metrics"]["specific"]["medium"]
    assert {"n", "accuracy", "ci", "invalid", "abstained", "failed"} <= set(cell)
    assert 0.0 <= cell["accuracy"] <= 1.0 and len(cell["ci"]) == 2
    table = (out / "report.md").read_text()
    assert "| Specific easy | Specific medium | Specific hard | Specific avg | General easy" in table


def test_eval_mirror_persona_sections_and_resume(tmp_path: Path) -> None:
    data = make_mirror(tmp_path / "mirror")
    out = tmp_path / "run"
    _ok(["eval", "--data", str(data), "--judge", "first", "--persona-sections", "Demographics", "--orders", "random",
         "--out", str(out), "--n-boot", "100", "--no-progress"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["persona_sections"] == ["Demographics"]
    assert manifest["orders"] == "random"
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 18
    stdout = _ok(["eval", "--resume", str(out), "--json", "--no-progress"])
    assert json.loads(stdout)["metrics"]["all"]["n"] == 18


def test_report_and_compare(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _ok(["eval", "--judge", "longer", "--out", str(a), "--n-boot", "100", "--no-progress"])
    _ok(["eval", "--judge", "first", "--out", str(b), "--n-boot", "100", "--no-progress"])
    board = json.loads(_ok(["report", str(a), str(b), "--out", str(tmp_path / "board"), "--json"]))
    assert [r["judge"] for r in board] == ["longer", "first"]
    assert "<svg" in (tmp_path / "board" / "report.html").read_text()
    diff = json.loads(_ok(["compare", str(a), str(b), "--json"]))
    assert diff["n"] == 72 and -1 <= diff["difference"] <= 1


def test_data_check_json(tmp_path: Path) -> None:
    report = json.loads(_ok(["data", "check", str(make_mirror(tmp_path)), "--json"]))
    assert report["rows_per_split_tier"]["general/medium"] == 3
    assert report["personas_unused"] == 1
    assert report["equal_length_answers"] == 0


def test_bad_options_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "--judge", "oracle", "--out", str(tmp_path / "x"), "--no-progress"])
    assert result.exit_code == 2 and "unknown judge" in result.output
    result = runner.invoke(app, ["eval", "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "y")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_help_imports_nothing_heavy() -> None:
    code = ("import sys; from tailorbench.cli.app import app; "
            "heavy = [m for m in ('torch', 'transformers', 'numpy', 'scipy', 'openai', 'sqlalchemy') "
            "if m in sys.modules]; print(','.join(heavy))")
    heavy = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert heavy == ""
    help_text = subprocess.run([sys.executable, "-m", "tailorbench.cli.app", "--help"], capture_output=True,
                               text=True)
    assert "eval" in help_text.stdout
