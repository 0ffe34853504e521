"""Stage 3 generation (gold / predicted / no attributes) through the real llama.cpp server, the A/B tasks through
the real annotation service (import, labels, export) and back into the stage-3 analysis; the plan is pure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.annotation.importer import read_import
from tailorbench.cli.app import app
from tailorbench.errors import ConfigError
from tailorbench.threestage import verbs as api
from tailorbench.threestage.incorporation.generation import load_templates, plan, render
from tailorbench.threestage.recentering_formats import RelevanceItem, item_key
from tests.conftest import LlamaServer
from tests.threestage.helpers import service_round_trip, write_jsonl

EX = api.example_dir()
HUMANS = sorted(EX.glob("ann_*_task3.jsonl"))
VOTES = EX / "illustrative-llm_relevance.jsonl"


def _items() -> list[RelevanceItem]:
    return [RelevanceItem(0, "u1", "Plan dinner.", ["vegetarian", "runner", "in Oslo"]),
            RelevanceItem(1, "u2", "Explain taxes.", ["teacher", "two kids"])]


def test_plan_conditions_and_counts() -> None:
    items = _items()
    k = {(i.index, a): item_key(i.index, i.user_id, a) for i in items for a in i.attributes}
    gold = {k[0, "vegetarian"]: True, k[0, "runner"]: False, k[0, "in Oslo"]: False, k[1, "teacher"]: False}
    predicted = {k[0, "vegetarian"]: True, k[0, "runner"]: True}
    tasks, skipped = plan(items, ["gold", "predicted", "none"], gold, predicted)
    by = {(t.item.index, t.condition): t for t in tasks}
    assert by[0, "gold"].given == ("vegetarian",) and by[0, "gold"].rated == ("vegetarian",)
    # a wrongly predicted attribute is given and rated too; its gold status stays in gold_relevant
    assert by[0, "predicted"].given == ("vegetarian", "runner")
    assert by[0, "predicted"].rated == ("vegetarian", "runner")
    assert by[0, "none"].given == () and by[0, "none"].rated == ("vegetarian",)
    assert set(by) == {(0, "gold"), (0, "predicted"), (0, "none")}
    assert skipped == {
        "attributes without a human label": 1,
        "gold: no attribute the human majority marks relevant": 1,
        "predicted: attributes without a vote (not given)": 1,
        "predicted: no vote for the item": 1,
        "none: nothing to rate (no gold-relevant or given attribute)": 1,
    }
    with pytest.raises(ConfigError, match="needs stage-2 human labels"):
        plan(items, ["gold"], None, None)
    with pytest.raises(ConfigError, match="conditions must be among"):
        plan(items, ["best"], gold, None)


def test_templates_render_messages(tmp_path: Path) -> None:
    t = load_templates()
    msgs = render(t["personalized"]["template"], prompt="Plan dinner.", attributes=["The user is vegetarian."])
    assert [m["role"] for m in msgs] == ["system", "user"] and "- The user is vegetarian." in msgs[0]["content"]
    assert "Nothing specific" in render(t["personalized"]["template"], prompt="x", attributes=[])[0]["content"]
    assert render(t["generic"]["template"], prompt="Plan dinner.")[-1] == {"role": "user", "content": "Plan dinner."}
    own = tmp_path / "own.jinja"
    own.write_text("<|user|>\nFor someone who is {{ attributes | join(', ') }}: {{ prompt }}\n")
    t2 = load_templates(personalized=own)
    assert render(t2["personalized"]["template"], prompt="p", attributes=["a", "b"]) == [
        {"role": "user", "content": "For someone who is a, b: p"}]
    (tmp_path / "bad.jinja").write_text("{% if %}")
    with pytest.raises(ConfigError, match="template syntax error"):
        load_templates(generic=tmp_path / "bad.jinja")


def _ab_form(labels: dict[str, int]) -> Any:
    """Answer every attribute of an A/B task with `labels[condition]` (-2..2, personalized vs generic), shown
    on the 1..5 scale the way the page shows it (answer 2 vs answer 1, in the assignment's order)."""

    def answer(name: str, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, str]:
        want = labels[payload["meta"]["condition"]]
        shown = -want if layout.get("swap") else want
        return {f"s_{a['key']}": str(shown + 3) for a in payload["attributes"]}

    return answer


def test_generate_through_llama_and_the_annotation_service(llama_server: LlamaServer, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    spec = f"openai:{llama_server.model}@{llama_server.base_url}"
    out = tmp_path / "gen"
    args = ["stages", "generate", "--items", str(EX / "relevance_items.jsonl"), "--model", spec, "--out", str(out),
            "--name", "tiny", "--max-tokens", "16", "--json", "--human", *map(str, HUMANS), "--predicted", str(VOTES)]
    llama_server.reset()
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)
    assert m["conditions"] == ["gold", "predicted", "none"] and m["predictor"] == "illustrative-llm"
    tasks = [json.loads(line) for line in (out / "ab_tasks.jsonl").read_text().splitlines()]
    gens = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    # one call per distinct prompt: 18 generic answers + the distinct (prompt, attributes) personalized ones
    assert m["generations"]["calls"] == len(gens) == llama_server.count()
    assert sum(g["role"] == "generic" for g in gens) == 18
    # the tiny model answers with a fixed sentence (or "A" when a prompt looks like a judge's)
    assert m["generations"]["ok"] == len(gens) and {g["text"] for g in gens} <= {"Hello from tiny llama.", "A"}
    assert sum(m["tasks_written"].values()) == len(tasks) == m["planned_tasks"]
    assert m["identical_answers"] == sum(t["generic"] == t["personalized"] for t in tasks) > 0
    nothing = m["skipped"].get("none: nothing to rate (no gold-relevant or given attribute)", 0)
    assert m["tasks_written"]["none"] + nothing == 18 and nothing == m["skipped"][
        "gold: no attribute the human majority marks relevant"]
    assert m["tasks_written"]["gold"] == 18 - nothing and m["tasks_written"]["predicted"] > 0
    for t in tasks:
        meta = t["meta"]
        assert t["id"] == f"{meta['index']}-{meta['condition']}" and meta["generator"] == "tiny"
        assert set(t["attributes"]) == set(meta["gold_relevant"]) | set(meta["given"])
        if meta["condition"] == "gold":
            assert meta["given"] == meta["gold_relevant"]
    # exactly what the annotation service imports as ab_rating items
    fmt, parsed = read_import(out / "ab_tasks.jsonl", "ab_rating")
    assert fmt == "items" and len(parsed) == len(tasks)
    # a re-run is served from the call cache
    llama_server.reset()
    again = CliRunner().invoke(app, [*args[:7], str(tmp_path / "gen2"), *args[8:]])
    assert again.exit_code == 0, again.output
    assert llama_server.count() == 0
    assert (tmp_path / "gen2" / "ab_tasks.jsonl").read_text() == (out / "ab_tasks.jsonl").read_text()
    # humans rate through the service; its export goes straight into the stage-3 analysis
    export = service_round_trip(tmp_path, "ab_rating", out / "ab_tasks.jsonl",
                                _ab_form({"gold": 1, "predicted": -1, "none": 0}), ["r1", "r2"], 2)
    rep = api.incorporation(out / "ab_tasks.jsonl", [export / "ratings.jsonl"], n_resamples=20)
    assert rep["n_items_rated_by_humans"] == sum(len(t["attributes"]) for t in tasks)
    assert {c: e["mean_rating"] for c, e in rep["by_condition"].items()} == {"gold": 1.0, "predicted": -1.0,
                                                                              "none": 0.0}
    assert rep["ratings_for_unknown_items"] == {} and rep["missing_ratings"] == {}


def test_generate_counts_what_it_cannot_use(llama_server: LlamaServer, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Without human labels only `none` and `predicted` run, and what cannot be used is counted; a server that
    does not answer stops the run before any file is written."""
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    items = write_jsonl(tmp_path / "items.jsonl", [
        {"index": 0, "user_id": "u1", "prompt": "Plan dinner.", "attributes": ["vegetarian", "runner"]},
        {"index": 1, "user_id": "u2", "prompt": "Explain taxes.", "attributes": ["teacher"]}])
    votes = write_jsonl(tmp_path / "votes.jsonl", [
        {"model": "m", "sample_index": 0, "user_id": "u1", "items": [{"attribute": "vegetarian", "relevant": True},
                                                                    {"attribute": "runner", "relevant": False}]}])
    spec = f"openai:{llama_server.model}@{llama_server.base_url}"
    m = api.generate(items, spec, tmp_path / "g", predicted=[votes], max_tokens=8)
    assert m["conditions"] == ["predicted", "none"]
    assert m["tasks_written"] == {"predicted": 1}
    assert m["skipped"] == {"predicted: no vote for the item": 1,
                            "none: nothing to rate (no gold-relevant or given attribute)": 2}
    dead = "openai:nothing@http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError):
        api.generate(items, dead, tmp_path / "dead", predicted=[votes])
    assert not (tmp_path / "dead").exists()
