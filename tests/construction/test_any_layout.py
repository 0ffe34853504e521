"""The construction pipeline builds on any layout's people: `personas:` names a benchmark a registered layout
reads (here a flat survey profile, nothing like PersonaFeedback's sections), the profile stage takes each
participant's persona as it is (no model call), masking hides a seeded share of the profile's fields, and the
export carries the split and tier names the config gives, declared in sidecars so `--data` and the annotation
import read them. The model is a scripted backend answering the stages' JSON schemas (named so)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from tailorbench.annotation.importer import read_import
from tailorbench.construction.config import load_build_config
from tailorbench.construction.pipeline import run_build
from tailorbench.datasets import LAYOUTS, load_benchmark
from tailorbench.errors import ConfigError
from tailorbench.models.backends import BACKENDS
from tailorbench.models.base import ChatResult, GenParams, Message
from tests.helpers.survey_layout import PROFILES, SurveyLayout, make_survey


class SchemaScriptedAPI:
    """A scripted backend: a valid reply to each stage's schema; answers differ with the prompt (so the three
    variants of one question give three different answers)."""

    backend = "schemascripted"
    supports_logprobs = False
    remote = True
    public_base_url = None
    calls: ClassVar[list[str]] = []

    def __init__(self, model: str, *, spec: str = "") -> None:
        self.model, self.spec = model, spec or f"schemascripted:{model}"

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        name = dict(params.extra)["response_format"]["json_schema"]["name"]
        SchemaScriptedAPI.calls.append(name)
        digest = hashlib.sha256(json.dumps(list(messages)).encode()).hexdigest()[:8]
        reply = ({"questions": [{"scene": "food", "question": "What should I cook tonight?"}]}
                 if name == "questions" else {"answer": f"Answer {digest}"})
        text = json.dumps(reply)
        return ChatResult(text=text, raw=text, finish_reason="stop", prompt_tokens=5, completion_tokens=5)

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model}


@pytest.fixture
def survey(tmp_path: Path) -> Iterator[Path]:
    LAYOUTS.add("survey", SurveyLayout())
    BACKENDS.add("schemascripted", SchemaScriptedAPI, replace=True)
    SchemaScriptedAPI.calls = []
    yield make_survey(tmp_path / "survey")
    LAYOUTS.remove("survey")


def _config(tmp_path: Path, **over: Any) -> Path:
    data: dict[str, Any] = {
        "name": "survey-build", "model": "schemascripted:m",
        "personas": "survey", "out": "out", "questions": {"scenes": ["food"], "per_user": 1,
                                                          "general_pool": ["How do I sleep better?"],
                                                          "general_per_user": 1},
        "splits": {"specific": "own", "general": "shared"},
        "pairs": {"difficulty": {"A1-A3": "clear", "A2-A3": "subtle", "A1-A2": "subtle"}},
    }
    data.update(over)
    path = tmp_path / "build.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_build_on_a_survey_layout_with_its_own_names(tmp_path: Path, survey: Path) -> None:
    config = load_build_config(_config(tmp_path))
    assert config.personas == str(survey)  # a path next to the config file
    summary = run_build(config, log=lambda _: None)
    stages = {s.name: s for s in summary.stages}
    assert stages["profile"].records == 3 and stages["profile"].stats["attempts"] == 0  # personas as they are
    # 3 question calls + 3 users x 2 questions x 3 variants, less the persona-free (A3) answers to the same
    # question, which are one request (the cache sends identical requests once): 18 - 2 x 2
    assert SchemaScriptedAPI.calls.count("questions") == 3 and SchemaScriptedAPI.calls.count("answer") == 14
    bench = load_benchmark(tmp_path / "out" / "export" / "pairs.jsonl")
    assert bench.splits == ("own", "shared") and bench.tiers == ("clear", "subtle")
    assert len(bench.cases) == 18 and {c.split for c in bench.cases} == {"own", "shared"}
    assert {c.tier for c in bench.cases} == {"clear", "subtle"}
    for case in bench.cases:
        assert case.persona == PROFILES[case.user_id]
        masked = case.meta["masked"]
        if case.meta["pair_rule"] != "A1-A3":  # A2's persona hides a seeded share of the flat profile's fields
            assert masked and set(masked) < set(PROFILES[case.user_id])
    # the annotation project imports the pairs with the same names; no attribute items without conversations
    project = json.loads((tmp_path / "out" / "export" / "annotation" / "project.json").read_text())
    assert [i["task"] for i in project["imports"]] == ["pairwise"]
    fmt, items = read_import(tmp_path / "out" / "export" / "annotation" / "pairwise.jsonl", "pairwise")
    assert fmt == "paircase" and {it.payload["split"] for it in items} == {"own", "shared"}
    # a rerun reuses every stage
    again = run_build(config, log=lambda _: None)
    assert {s.status for s in again.stages} == {"reused"}


def test_build_config_sources_and_names_are_checked(tmp_path: Path, survey: Path) -> None:
    with pytest.raises(ConfigError, match="exactly one of memory"):
        load_build_config(_config(tmp_path, memory="m.jsonl"))
    with pytest.raises(ConfigError, match=r"splits.general.*'all'"):
        load_build_config(_config(tmp_path, splits={"general": "all"}))
    with pytest.raises(ConfigError, match=r"splits.*different split names"):
        load_build_config(_config(tmp_path, splits={"specific": "x", "general": "x"}))
    with pytest.raises(ConfigError, match=r"pairs.difficulty.*unknown pair rule"):
        load_build_config(_config(tmp_path, pairs={"difficulty": {"A9": "x"}}))
    with pytest.raises(ConfigError, match="users not in"):
        run_build(load_build_config(_config(tmp_path, users=["p9"])), log=lambda _: None)
