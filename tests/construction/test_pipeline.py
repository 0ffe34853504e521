"""The construction pipeline end to end against the real llama.cpp server with the tiny model: JSON-schema
constrained output, checkpoints, --until, zero-call re-runs, exports the annotation service imports, and
failure counting with a template that cannot yield valid JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.construction.config import load_build_config
from tailorbench.construction.pipeline import run_build
from tailorbench.datasets import load_benchmark
from tailorbench.errors import ConfigError
from tests.conftest import LlamaServer

pytestmark = pytest.mark.server

EXAMPLE_MEMORY = Path(__file__).resolve().parents[2] / "examples" / "construction" / "memory.jsonl"


def _config(tmp_path: Path, server: LlamaServer, **over: Any) -> Path:
    """A config sized for the tiny model: bounds keep each constrained reply to a few dozen tokens."""
    data: dict[str, Any] = {
        "name": "tiny", "model": f"openai:{server.model}@{server.base_url}",
        "model_options": {"max_retries": 0}, "structured_output": "llama_cpp",
        "memory": str(EXAMPLE_MEMORY), "out": "out", "users": ["u_sam"], "retries": 1,
        "generation": {"max_tokens": 400},
        "profile": {"max_attributes": 2, "key_chars": 8, "value_chars": 12, "max_evidence": 1,
                    "max_memory_items": 3, "item_chars": 60},
        "questions": {"scenes": ["food", "travel"], "per_user": 1, "question_chars": 24,
                      "general_pool": ["How can I sleep better?"], "general_per_user": 1},
        "answers": {"answer_chars": 16},
    }
    data.update(over)
    path = tmp_path / "build.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _statuses(summary: Any) -> dict[str, str]:
    return {s.name: s.status for s in summary.stages}


def test_pipeline_end_to_end(tmp_path: Path, llama_server: LlamaServer, call_cache: Path) -> None:
    config = load_build_config(_config(tmp_path, llama_server))
    out = tmp_path / "out"
    llama_server.reset()
    summary = run_build(config, log=lambda _: None)
    assert _statuses(summary) == dict.fromkeys(("profile", "questions", "answers", "pairs", "export"), "ran")
    stats = {s.name: s.stats for s in summary.stages}
    # 1 profile + 1 question call + 2 questions x 3 variants, every one valid under the grammar
    assert stats["profile"]["ok"] == 1 and stats["questions"]["ok"] == 1 and stats["answers"]["ok"] == 6
    sent = llama_server.count()
    assert sent == sum(s["attempts"] for s in stats.values()) >= 8
    assert all(s["invalid_json"] == 0 and s["schema_errors"] == 0 for s in stats.values())

    profile = json.loads((out / "profile.jsonl").read_text().splitlines()[0])
    assert set(profile["persona"]) <= {"Demographics", "Personality", "Preference", "Values_and_Interests"}
    assert set(profile["evidence"]) == {f"{s} > {k}" for s, node in profile["persona"].items() for k in node}
    questions = json.loads((out / "questions.jsonl").read_text())["questions"]
    assert [q["split"] for q in questions] == ["specific", "general"]
    assert questions[1]["question"] == "How can I sleep better?" and questions[0]["scene"] in ("food", "travel")

    # every pair either exported or counted (identical answers are a real outcome with a 16-char tiny model)
    pairs_stage = next(s for s in summary.stages if s.name == "pairs")
    assert pairs_stage.records + len(pairs_stage.failures) == 2 * 3
    bench = load_benchmark(out / "export" / "pairs.jsonl")
    assert len(bench.cases) == pairs_stage.records
    for case in bench.cases:
        rule = case.meta["pair_rule"]
        assert case.tier == {"A1-A3": "easy", "A2-A3": "medium", "A1-A2": "hard"}[rule]
        assert (case.meta["chosen_variant"], case.meta["rejected_variant"]) == tuple(rule.split("-"))
        assert case.persona == profile["persona"]

    project = json.loads((out / "export" / "annotation" / "project.json").read_text())
    assert [i["task"] for i in project["imports"]] == ["pairwise", "attributes"]
    from tailorbench.annotation.importer import read_import

    if bench.cases:
        fmt, items = read_import(out / "export" / "annotation" / "pairwise.jsonl", "pairwise")
        assert fmt == "paircase" and len(items) == len(bench.cases)
    fmt, items = read_import(out / "export" / "annotation" / "attributes.jsonl", "attributes")
    assert fmt == "items" and len(items) == 1

    # a re-run reuses every checkpoint and sends nothing
    exported = (out / "export" / "pairs.jsonl").read_bytes()
    llama_server.reset()
    again = run_build(config, log=lambda _: None)
    assert set(_statuses(again).values()) == {"reused"} and llama_server.count() == 0
    # without checkpoints every stage runs again, and the call cache answers every request
    shutil.rmtree(out / "stages")
    rerun = run_build(config, log=lambda _: None)
    assert set(_statuses(rerun).values()) == {"ran"} and llama_server.count() == 0
    assert rerun.model is not None and rerun.model["stats"]["cache_hits"] == sent
    assert (out / "export" / "pairs.jsonl").read_bytes() == exported

    # --until through the CLI on a fresh directory: stops after questions, still zero calls
    result = CliRunner().invoke(app, ["build", "run", str(tmp_path / "build.yaml"), "--until", "questions",
                                      "--out", str(tmp_path / "partial"), "--json"])
    assert result.exit_code == 0, result.output
    assert [s["name"] for s in json.loads(result.stdout)["stages"]] == ["profile", "questions"]
    assert not (tmp_path / "partial" / "answers.jsonl").exists() and llama_server.count() == 0


def test_failures_are_counted(tmp_path: Path, llama_server: LlamaServer, call_cache: Path) -> None:
    """Prompt-only mode and a template asking for prose: every attempt is invalid JSON, retried once, counted."""
    template = tmp_path / "prose.jinja"
    template.write_text("Say hello to {{ user_id }} in one sentence. Do not use JSON.\n", encoding="utf-8")
    path = _config(tmp_path, llama_server, structured_output="none", users=["u_sam", "u_lin"],
                   templates={"profile": str(template)}, generation={"max_tokens": 24})
    llama_server.reset()
    result = CliRunner().invoke(app, ["build", "run", str(path), "--json"])
    # a stage that produced nothing fails the build (exit 3), with its first causes; the summary is still printed
    assert result.exit_code == 3, result.output
    assert "error: stage profile produced nothing (2 items); first causes: " in result.stderr
    assert "not valid JSON" in result.stderr and "(x2)" in result.stderr
    stages = {s["name"]: s for s in json.loads(result.stdout)["stages"]}
    profile = stages["profile"]
    assert (profile["items"], profile["ok"], profile["gave_up"]) == (2, 0, 2)
    assert profile["attempts"] == 4 and profile["retries"] == 2 and profile["invalid_json"] == 4
    assert profile["failures"] == 2 and llama_server.count() == 4
    state = json.loads((tmp_path / "out" / "stages" / "profile.json").read_text())
    assert all(len(f["errors"]) == 2 and "not valid JSON" in f["errors"][0] for f in state["failures"])
    assert stages["pairs"]["records"] == 0 and stages["export"]["status"] == "ran"


def test_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("model: openai:m\nmemory: m.jsonl\nout: o\npairs: {rules: [A1-A4]}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pairs\.rules"):
        load_build_config(path)
    path.write_text("model: openai:m\nmemory: m.jsonl\nout: o\nquestoins: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="questoins"):
        load_build_config(path)
    path.write_text("model: openai:m\nmemory: m.jsonl\nout: o\n", encoding="utf-8")
    config = load_build_config(path)
    assert config.memory == (tmp_path / "m.jsonl").resolve() and config.out == (tmp_path / "o").resolve()
    with pytest.raises(ConfigError, match="unknown stage 'judge'"):
        run_build(config, until="judge")
