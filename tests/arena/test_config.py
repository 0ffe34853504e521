"""arena.yaml: every error names the file and the key's path (exit 2 through the CLI), and what the config
derives (pairs, personalized/generic pairs, the default questionnaire) is what the docs say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tailorbench.arena.config import load_config, parse_config
from tailorbench.cli.app import app
from tailorbench.errors import ConfigError
from tests.arena.conftest import arena_config


def _doc(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    return arena_config(tmp_path, **changes)


@pytest.mark.parametrize("change,where", [
    ({"contestants": [{"name": "one", "model": "illustrative-arena:x"}]}, "contestants"),
    ({"contestants": [{"name": "a", "model": "illustrative-arena:x", "profil": True},
                      {"name": "b", "model": "illustrative-arena:y"}]}, "contestants[0].profil"),
    ({"contestants": [{"name": "a b", "model": "illustrative-arena:x"},
                      {"name": "b", "model": "illustrative-arena:y"}]}, "contestants[0].name"),
    ({"contestants": [{"name": "a", "model": "illustrative-arena:x"},
                      {"name": "a", "model": "illustrative-arena:y"}]}, "contestants"),
    ({"contestants": [{"name": "a", "model": "nosuchbackend:x"},
                      {"name": "b", "model": "illustrative-arena:y"}]}, "contestants[0].model"),
    ({"battles": {"per_participant": True}}, "battles.per_participant"),
    ({"battles": {"per_participant": 0}}, "battles.per_participant"),
    ({"vote": {"reasons": True}}, "vote.reasons"),
    ({"gold": {"rate": 0.3}}, "gold"),
    ({"spend": {"per_arena": -1}}, "spend.per_arena"),
    ({"crowd": {"kind": "prolific"}}, "crowd"),
    ({"crowd": {"kind": "open", "completion_url": "javascript:alert(1)"}}, "crowd.completion_url"),
    ({"profile": {"fields": [{"key": "age", "label": "Age", "segment": True}]}}, "profile.fields[0]"),
    ({"profile": {"fields": [{"key": "x", "label": "X"}, {"key": "x", "label": "Y"}]}}, "profile.fields"),
    ({"questions": {"own": False, "pool": []}}, "questions"),
    ({"questions": {"pool_file": "missing.txt"}}, "questions.pool_file"),
    ({"illustrative": False}, "contestants[0].model"),
    ({"leaderboard": {"ci": 1.5}}, "leaderboard.ci"),
])
def test_errors_name_the_file_and_the_key(tmp_path: Path, change: dict[str, Any], where: str) -> None:
    path = tmp_path / "arena.yaml"
    with pytest.raises(ConfigError) as got:
        parse_config(_doc(tmp_path, **change), path)
    assert str(got.value).startswith(f"{path}: {where}:"), str(got.value)


def test_derived_pairs_and_the_default_questionnaire(tmp_path: Path) -> None:
    config = parse_config(_doc(tmp_path), tmp_path / "arena.yaml")
    assert config.pairs == [("assistant-personalized", "assistant-generic"),
                            ("assistant-personalized", "other-generic"), ("assistant-generic", "other-generic")]
    assert config.pairs_personalized_generic == [("assistant-personalized", "assistant-generic")]
    sections = {f.section for f in config.profile.fields}
    assert sections == {"Demographics", "Personality", "Preference"}  # PersonaFeedback's persona sections
    assert {"age", "gender", "location"} <= {f.key for f in config.profile.fields}  # PRISM's survey


def test_the_cli_says_the_key_with_exit_2(tmp_path: Path) -> None:
    d = tmp_path / "a"
    d.mkdir()
    (d / "arena.yaml").write_text(yaml.safe_dump(_doc(tmp_path, battles={"per_participant": "ten"})),
                                  encoding="utf-8")
    got = CliRunner().invoke(app, ["arena", "plan", str(d)])
    assert got.exit_code == 2 and "battles.per_participant" in got.output and "arena.yaml" in got.output


def test_init_writes_a_template_that_loads_and_refuses_to_overwrite(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["arena", "init", str(tmp_path / "t")]).exit_code == 0
    config = load_config(tmp_path / "t")
    assert config.pairs_personalized_generic == [("small-personalized", "small-generic")]
    assert "# " in (tmp_path / "t" / "arena.yaml").read_text(encoding="utf-8")  # commented
    again = runner.invoke(app, ["arena", "init", str(tmp_path / "t")])
    assert again.exit_code == 2 and "--force" in again.output
    assert runner.invoke(app, ["arena", "init", str(tmp_path / "e"), "--example", "--json"]).exit_code == 0
    assert load_config(tmp_path / "e").illustrative
    plan = runner.invoke(app, ["arena", "plan", str(tmp_path / "e"), "--json"])
    assert plan.exit_code == 0 and '"cost_per_battle_usd"' in plan.output


def test_the_demo_keeps_a_database_password_out_of_arena_yaml() -> None:
    from tailorbench.arena.demo import example_config

    assert "database" not in example_config("postgresql+psycopg://user:s3cret@127.0.0.1:5432/arena")
    plain = "postgresql+psycopg://postgres@127.0.0.1:5432/arena"
    assert example_config(plain)["database"] == plain
