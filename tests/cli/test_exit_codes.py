"""The exit-code table (docs/cli.md, `tailor --help`) holds for every verb: 2 for bad input, 130 for Ctrl-C,
and the table in the docs is the one the CLI prints. Exit code 3 is tested where the work is
done (tests/evaluate/test_failures.py, tests/evaluate/test_crash_resume.py, tests/construction, tests/geneval,
tests/threestage)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli import app as app_module
from tailorbench.cli.app import app
from tailorbench.cli.common import EXIT_CODES
from tailorbench.errors import DataError

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_help_shows_the_table_of_the_docs() -> None:
    shown = subprocess.run([sys.executable, "-m", "tailorbench.cli.app", "--help"], capture_output=True,
                           text=True, check=True).stdout
    assert "Exit codes of every verb" in shown
    for code, _ in EXIT_CODES:
        assert re.search(rf"^\s*{code}\s+\S", shown, re.MULTILINE), code
    docs = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `(\d+)` \| (.+?) \|$", docs, re.MULTILINE))
    assert sorted(map(int, table)) == sorted(code for code, _ in EXIT_CODES)
    assert "docs/cli.md" in (REPO / "README.md").read_text(encoding="utf-8")


def _missing(tmp_path: Path) -> str:
    return str(tmp_path / "missing")


# every verb, given input that cannot work: exit 2 with one `error:` line, before any work
BAD_INPUT: dict[str, list[str]] = {
    "eval": ["eval", "--data", "{missing}", "--out", "{tmp}/o"],
    "eval-resume": ["eval", "--resume", "{missing}"],
    "eval-max-failed": ["eval", "--max-failed", "1.5", "--out", "{tmp}/o"],
    "report": ["report", "{missing}", "--out", "{tmp}/board"],
    "compare": ["compare", "{missing}", "{missing}"],
    "data-check": ["data", "check", "{missing}"],
    "data-convert": ["data", "convert", "{missing}", "{tmp}/x.jsonl"],
    "agree": ["agree", "{missing}.jsonl"],
    "tiers": ["tiers", "{missing}.jsonl", "--items", "{missing}.jsonl", "--out", "{tmp}/t.jsonl"],
    "cache": ["cache", "stats", "--path", "{tmp}"],
    "train-rm": ["train-rm", "--config", "{missing}.yaml"],
    "annotate": ["annotate", "import", "p", "{missing}.jsonl", "--dir", "{tmp}/ann"],
    "stages": ["stages", "report-relevance", "--human", "{missing}.jsonl"],
    "stages-max-failed": ["stages", "judge-relevance", "--items", "{missing}.jsonl", "--model", "openai:m@http://h/v1",
                          "--out", "{tmp}/v.jsonl", "--max-failed", "2"],
    "build": ["build", "run", "{missing}.yaml"],
    "build-max-failed": ["build", "run", "{missing}.yaml", "--max-failed", "1.5"],
    "gen-eval": ["gen-eval", "--out", "{tmp}/g"],
    "gen-eval-max-failed": ["gen-eval", "--model", "openai:m@http://h/v1", "--max-failed", "7", "--out", "{tmp}/g"],
}


@pytest.mark.parametrize("verb", sorted(BAD_INPUT))
def test_bad_input_is_exit_2(verb: str, tmp_path: Path) -> None:
    args = [a.format(missing=_missing(tmp_path), tmp=tmp_path) for a in BAD_INPUT[verb]]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "error" in result.output.lower() or "usage" in result.output.lower()


def test_compare_without_shared_cases_is_exit_2(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert runner.invoke(app, ["eval", "--split", "general", "--out", str(a), "--n-boot", "10", "--no-progress"]
                         ).exit_code == 0
    assert runner.invoke(app, ["eval", "--split", "specific", "--out", str(b), "--n-boot", "10", "--no-progress"]
                         ).exit_code == 0
    result = runner.invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 2 and "share no judged case" in result.stderr


def test_cache_clear_declined_removes_nothing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["cache", "clear", "--path", str(tmp_path / "c.sqlite")], input="")
    assert result.exit_code == 0 and "nothing removed" in result.stderr


def _main_with(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> int:
    def raising() -> None:
        raise exc

    monkeypatch.setattr(app_module, "app", raising)
    with pytest.raises(SystemExit) as exited:
        app_module.main()
    return int(exited.value.code or 0)


def test_main_keeps_the_codes_for_what_escapes_a_verb(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main_with(monkeypatch, KeyboardInterrupt()) == 130
    assert "interrupted" in capsys.readouterr().err
    assert _main_with(monkeypatch, DataError("f.jsonl", 3, "question", "must not be empty")) == 2
    assert capsys.readouterr().err == "error: f.jsonl:3: field 'question': must not be empty\n"


def test_ctrl_c_in_any_verb_is_130(monkeypatch: pytest.MonkeyPatch) -> None:
    from tailorbench import api

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "check_data", interrupted)
    assert runner.invoke(app, ["data", "check", "demo"]).exit_code == 130


def test_resume_of_a_broken_or_foreign_run_directory_is_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json", encoding="utf-8")
    result = runner.invoke(app, ["eval", "--resume", str(broken)])
    assert result.exit_code == 2 and "manifest.json:1: malformed JSON" in result.stderr
    gen = tmp_path / "gen"
    gen.mkdir()
    (gen / "manifest.json").write_text('{"kind": "gen-eval", "config": {}}', encoding="utf-8")
    result = runner.invoke(app, ["eval", "--resume", str(gen)])
    assert result.exit_code == 2 and "tailor gen-eval --resume" in result.stderr
