"""The bundled example study end to end through the real llama.cpp server: every stage runs, the tiny model's
unparseable answers are counted as invalid (never guessed), and every report is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.conftest import LlamaServer


def test_example_study_through_llama(llama_server: LlamaServer, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    spec = f"openai:{llama_server.model}@{llama_server.base_url}"
    out = tmp_path / "study"
    res = CliRunner().invoke(app, ["stages", "example", "--out", str(out), "--model", spec, "--resamples", "50",
                                   "--json"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)
    calls = result["calls"]
    # the tiny model answers "A" or a fixed sentence: no attribute list, yes/no, category or digit can be parsed
    assert calls["extract"]["calls"] == 6 and calls["extract"]["invalid"] == 6
    assert calls["relevance"]["calls"] == 72 and calls["relevance"]["invalid"] == 72
    assert calls["ab"]["calls"] == 28 and calls["ab"]["invalid"] == 28
    assert calls["taxonomy"]["invalid"] == calls["taxonomy"]["calls"] > 0
    rel = result["relevance"]
    assert rel["missing_ratings"] == {"invalid vote (model)": 72}
    assert "live-model" not in rel["raters"] and rel["raters"]["bm25"]["group"] == "model"
    assert result["incorporation"]["missing_ratings"] == {"null label": 28}
    assert result["extraction"]["taxonomy"]["live-model"]["invalid"] == calls["taxonomy"]["calls"]
    # interventions, judged on held-out users; the baseline's votes cover exactly those users (same split)
    held = set(result["verifier"]["split"]["heldout_users"])
    assert held == set(result["relevance_classifier"]["split"]["heldout_users"]) == set(calls["bm25"]["test"]["users"])
    assert result["relevance_classifier"]["heldout"]["raters"]["bm25"]["n"] == result["relevance_classifier"][
        "heldout"]["n_items"]
    # stage-3 generation: gold from the humans, predicted from the relevance classifier's held-out votes
    gen = calls["generate"]
    assert gen["predictor"] == "relevance-classifier" and gen["generations"]["failed"] == 0
    assert sum(gen["tasks_written"].values()) == gen["planned_tasks"] > 0
    assert (out / "generated" / "ab_tasks.jsonl").stat().st_size > 0
    for stage in ("extraction", "relevance", "incorporation", "verifier", "relevance_classifier"):
        for ext in ("json", "md", "html"):
            assert (out / f"{stage}.{ext}").stat().st_size > 0
    assert "<svg" in (out / "relevance.html").read_text()
    assert "illustrative" in (out / "summary.md").read_text()
    extracted = [json.loads(line) for line in (out / "extracted_items.jsonl").read_text().splitlines()]
    assert {r["status"] for r in extracted} == {"invalid"} and all(r["raw"] for r in extracted)
    # a second run is served from the call cache
    llama_server.reset()
    res = CliRunner().invoke(app, ["stages", "example", "--out", str(tmp_path / "again"), "--model", spec,
                                   "--resamples", "50", "--json"])
    assert res.exit_code == 0, res.output
    assert llama_server.count() == 0
