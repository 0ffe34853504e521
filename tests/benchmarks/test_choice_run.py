"""Multiple-choice runs and PrefEval's generation task against the real llama.cpp test server:
every item answered, scored by its benchmark's scorer and reported per split and tier; a torn last line (a killed
process) is cut off and the run resumes with nothing lost or repeated; a directory holding another run's settings
is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tailorbench.benchmarks.choice_report import MULTIPLE_CHOICE
from tailorbench.benchmarks.choice_results import compute_results
from tailorbench.benchmarks.choice_run import ChoiceConfig, messages_for, run_choice
from tailorbench.benchmarks.prefeval_generation import GenerationConfig, run_generation
from tailorbench.benchmarks.run_pages import MANIFEST, PREDICTIONS
from tailorbench.benchmarks.scoring import generation_flags
from tailorbench.datasets.choice import load_choice_items
from tailorbench.errors import ConfigError
from tailorbench.run_kinds import RUN_KINDS
from tests.helpers.benchmark_fixtures import kill_9_after, make_personamem, make_prefeval

OPTIONS = {"turns": "0,2", "forms": "explicit,choice", "topics": "travel_hotel"}


def _config(data: Path, server: Any, **over: Any) -> ChoiceConfig:
    base = ChoiceConfig(data=str(data), model=f"openai:{server.model}@{server.base_url}", data_options=dict(OPTIONS),
                        max_tokens=8, n_boot=200)
    for key, value in over.items():
        setattr(base, key, value)
    return base


def _lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / PREDICTIONS).read_text().splitlines()]


def test_prefeval_run_reports_per_turn_count_and_resumes(tmp_path: Path, llama_server: Any) -> None:
    make_prefeval(tmp_path / "data")
    out = tmp_path / "run"
    results = run_choice(_config(tmp_path / "data", llama_server), out)
    rows = _lines(out)
    assert len(rows) == 3 * 2 * 2 and len({r["item"] for r in rows}) == len(rows)
    assert set(results["by_tier"]) == {"turns-0", "turns-2"} and set(results["by_split"]) == {"explicit",
                                                                                              "implicit-choice"}
    assert results["overall"]["n"] == 12 and results["overall"]["chance"] == 0.25
    assert all(r["status"] in ("ok", "invalid") for r in rows)
    assert all(r["warmup_response"] is not None for r in rows if r["split"] == "explicit")
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["kind"] == "multiple-choice" and manifest["status"] == "finished"
    assert "| tier turns-2 | 6 |" in (out / "report.md").read_text()

    # a killed process: five whole lines and a torn sixth; the resumed run writes exactly what is missing
    kept = (out / PREDICTIONS).read_text().splitlines(keepends=True)
    (out / PREDICTIONS).write_text("".join(kept[:5]) + kept[5][:17])
    again = run_choice(_config(tmp_path / "data", llama_server), out)
    resumed = _lines(out)
    assert [r["item"] for r in resumed] == [r["item"] for r in rows[:5]] + [r["item"] for r in rows[5:]]
    strip = ("cached", "latency_s")
    assert [{k: v for k, v in r.items() if k not in strip} for r in resumed] == [
        {k: v for k, v in r.items() if k not in strip} for r in rows]
    assert again["overall"] == results["overall"]

    with pytest.raises(ConfigError, match="other settings"):
        run_choice(_config(tmp_path / "data", llama_server, max_tokens=9), out)


def test_personamem_run(tmp_path: Path, llama_server: Any) -> None:
    make_personamem(tmp_path / "data")
    results = run_choice(_config(tmp_path / "data", llama_server, data_options={}), tmp_path / "run")
    assert results["overall"]["n"] == 8 and set(results["by_tier"]) == {"32k"}
    (tmp_path / "run" / "results.json").unlink()  # recomputed from the manifest and predictions alone
    merged = MULTIPLE_CHOICE.merge([tmp_path / "run", tmp_path / "run"], tmp_path / "report")
    assert merged[0]["overall"] == results["overall"] and "## Runs" in (tmp_path / "report" / "report.md").read_text()
    kind = RUN_KINDS.get("multiple-choice")  # registered by choice_report, what `tailor report` dispatches on
    assert kind.check(merged[0], None, None).failed == 0 and "<table>" in kind.html_body([tmp_path / "run"])
    assert set(results["by_split"]) == {"recall_user_shared_facts", "track_full_preference_evolution",
                                        "suggest_new_ideas"}


def test_messages_follow_the_benchmark(tmp_path: Path) -> None:
    make_prefeval(tmp_path)
    item = next(i for i in load_choice_items(tmp_path, options={"turns": "2"}).items if i.split == "explicit")
    messages = messages_for(item, "Noted.")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user", "assistant",
                                             "user"]
    assert messages[1]["content"] == item.warmup and messages[2]["content"] == "Noted."
    assert messages[-1]["content"] == item.prompt


def test_results_count_failures_apart() -> None:
    rows = [{"item": str(n), "split": "s", "tier": "t", "n_options": 4, "correct": n < 2,
             "status": "failed" if n == 3 else "ok" if n < 3 else "invalid"} for n in range(5)]
    manifest = {"config": {"n_boot": 100, "seed": 0, "model": "m", "data": "d"},
                "data_stats": {"layout": "x", "splits": ["s"], "tiers": ["t"]}}
    overall = compute_results(manifest, rows)["overall"]
    assert (overall["n"], overall["answered"], overall["failed"], overall["invalid"]) == (5, 4, 1, 1)
    assert overall["accuracy"] == 0.5 and overall["ci"][0] <= 0.5 <= overall["ci"][1]


def test_prefeval_generation_run_checks_every_answer_and_resumes(tmp_path: Path, llama_server: Any) -> None:
    make_prefeval(tmp_path / "data")
    spec = f"openai:{llama_server.model}@{llama_server.base_url}"
    config = GenerationConfig(data=str(tmp_path / "data"), model=spec, judge=spec, data_options=dict(OPTIONS),
                              max_tokens=8, n_boot=200)
    out = tmp_path / "gen"
    results = run_generation(config, out)
    rows = _lines(out)
    assert len(rows) == 12 and all(r["status"] == "ok" for r in rows)
    assert all(set(r["checks"]) == {"acknow", "violate", "helpful", "hallucinate"} for r in rows)
    assert all(r["scores"] == vars(generation_flags(r["checks"])) for r in rows)
    assert set(results["by_tier"]) == {"turns-0", "turns-2"} and results["overall"]["total"] == 12
    kept = (out / PREDICTIONS).read_text().splitlines(keepends=True)
    (out / PREDICTIONS).write_text("".join(kept[:7]) + kept[7][:9])
    again = run_generation(config, out)
    assert [r["item"] for r in _lines(out)] == [r["item"] for r in rows]
    assert again["overall"] == results["overall"]
    assert "| turns turns-2 | 6 |" in (out / "report.md").read_text()
    (out / "results.json").unlink()
    merged = RUN_KINDS.get("prefeval-generation").merge([out], tmp_path / "report")
    assert merged[0]["overall"] == results["overall"]


def test_kill_9_then_resume_loses_and_repeats_at_most_one_batch(tmp_path: Path, llama_server: Any) -> None:
    """A real SIGKILL in the middle of a multiple-choice run (calls held at a proxy so the kill lands among them;
    the call cache off, so nothing is answered twice by accident): the resumed run writes every missing item
    once; beyond the 12 items and their 3 warm-up turns it sends again only the warm-up turns and the calls that
    were in flight at the kill (at most the concurrency, 2)."""
    import sys
    import time

    from tests.helpers.counting_proxy import CountingProxy

    def hold(method: str, path: str, body: bytes) -> None:
        if path == "/v1/chat/completions":
            time.sleep(0.2)

    make_prefeval(tmp_path / "data")
    out = tmp_path / "run"
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    with CountingProxy(upstream, intercept=hold) as proxy:
        config = _config(tmp_path / "data", llama_server, batch_size=2,
                         model_options={"concurrency": 2, "adaptive": False, "cache_policy": "off"})
        config.model = f"openai:{llama_server.model}@{proxy.url}/v1"
        script = ("import json, sys\nfrom tailorbench.benchmarks.choice_run import ChoiceConfig, run_choice\n"
                  "run_choice(ChoiceConfig(**json.loads(sys.argv[1])), sys.argv[2])\n")
        kill_9_after([sys.executable, "-c", script, json.dumps(vars(config)), str(out)], out / PREDICTIONS, 4)
        assert 4 <= len(_lines(out)) < 12
        assert json.loads((out / MANIFEST).read_text())["status"] == "running"
        results = run_choice(config, out)
        rows = _lines(out)
        assert len(rows) == 12 and len({r["item"] for r in rows}) == 12 and results["overall"]["n"] == 12
        assert proxy.count("/v1/chat/completions") <= 12 + 3 + 3 + 2
    assert json.loads((out / MANIFEST).read_text())["status"] == "finished"
