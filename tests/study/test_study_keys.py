"""A model whose API key is not set is named by its study.yaml key: `study plan` warns before anything runs and
`study run` stops with exit 2 saying which key names the model and how to change it (not a flag of another verb:
study has no --judge-option). The bundled example's first comment names a command that exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app

runner = CliRunner()


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    made = runner.invoke(app, ["study", "init", str(tmp_path / "s")])
    assert made.exit_code == 0, made.output
    return tmp_path / "s"


def test_plan_warns_of_each_model_whose_key_is_not_set(study: Path) -> None:
    result = runner.invoke(app, ["study", "plan", str(study)])
    assert result.exit_code == 0, result.output
    for key in ("models.extractor", "models.generator", "models.judges.gpt-4o-mini"):
        assert f"warning: {study / 'study.yaml'}: {key} (openai:gpt-4o-mini) needs $OPENAI_API_KEY" in result.output


def test_run_names_the_study_yaml_key_of_the_model_without_a_key(study: Path) -> None:
    result = runner.invoke(app, ["study", "run", str(study)])
    assert result.exit_code == 2, result.output
    said = f"error: {study / 'study.yaml'}: models.extractor (openai:gpt-4o-mini) needs $OPENAI_API_KEY"
    assert said in result.output
    assert "models.options.api_key_env" in result.output and "--judge-option" not in result.output


def test_the_example_names_a_command_that_exists(study: Path) -> None:
    first = (study / "study.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert "`tailor study init DIR`" in first and "--example" not in first
