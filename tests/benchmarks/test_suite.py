"""A suite of benchmarks x judges x settings: every step a run directory of its own, a leaderboard with a column
per benchmark, and a second run of the same suite redoing nothing (each step resumes); bad suites are refused
naming the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tailorbench.benchmarks.suite import builtin_suite, load_suite, model_of, run_suite
from tailorbench.errors import ConfigError
from tests.helpers.benchmark_fixtures import make_personamem, make_prefeval


def _suite(tmp_path: Path, judges: list[str], **over: Any) -> Path:
    make_prefeval(tmp_path / "data" / "prefeval")
    make_personamem(tmp_path / "data" / "personamem")
    raw = {"name": "mini", "data_root": "data", "judges": judges, "settings": ["persona", "none"], "n_boot": 50,
           "benchmarks": [{"name": "prefeval", "data": "prefeval", "task": "multiple-choice",
                           "options": {"turns": "0", "topics": "shop_motors"}},
                          {"name": "prefeval-pairs", "data": "prefeval", "options": {"turns": "0,2"}},
                          {"name": "personamem", "data": "personamem", "task": "multiple-choice"}]}
    raw.update(over)
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_suite_runs_every_step_and_writes_one_leaderboard(tmp_path: Path, llama_server: Any) -> None:
    llm = f"llm:openai:{llama_server.model}@{llama_server.base_url}[max_tokens=4]"
    suite = load_suite(_suite(tmp_path, ["first", llm]))
    board = run_suite(suite, tmp_path / "out")
    assert board["benchmarks"] == ["prefeval", "prefeval-pairs", "personamem"]
    assert set(board["rows"]) == {"first · persona", "first · none", "first · mc", f"{llm} · persona",
                                  f"{llm} · none", f"{llm} · mc"}
    assert board["rows"]["first · mc"] == {"prefeval": None, "personamem": None}  # `first` answers no question
    assert board["rows"][f"{llm} · mc"]["prefeval"]["n"] == 3 * 3
    assert board["rows"]["first · persona"]["prefeval-pairs"]["n"] > 0
    text = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "| judge · setting | prefeval | prefeval-pairs | personamem |" in text
    files = sorted((tmp_path / "out").rglob("predictions.jsonl"))
    before = {p: p.read_bytes() for p in files}
    again = run_suite(suite, tmp_path / "out")
    assert again == json.loads((tmp_path / "out" / "leaderboard.json").read_text()) and again == board
    assert {p: p.read_bytes() for p in files} == before


def test_bad_suites_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key"):
        load_suite(_suite(tmp_path, ["first"], judge="x"))
    with pytest.raises(ConfigError, match=r"benchmarks\[0\]: task"):
        load_suite(_suite(tmp_path, ["first"], benchmarks=[{"name": "a", "data": "demo", "task": "mcq"}]))
    with pytest.raises(ConfigError, match="no such file"):
        load_suite(tmp_path / "nope.yaml")
    assert load_suite(_suite(tmp_path, ["first"]), judges=["longer"]).judges == ["longer"]


def test_builtin_suite_and_models_of_judges() -> None:
    path = builtin_suite("personalization")
    assert path is not None and load_suite("personalization", data_root="/data").benchmarks[1].data == \
        "/data/PrefEval"
    assert model_of("llm:openai:m@http://h/v1[temperature=0]") == "openai:m@http://h/v1" and model_of("rm:x") is None
