"""The pair views of the multiple-choice benchmarks and the pairwise benchmarks go through `tailor eval`'s runner
unchanged: the layout's options travel in `EvalConfig.data_options` (stored in the manifest, so a resumed run
reads the same data) and results are laid out by the layout's own splits and tiers (PrefEval: per form and
filler-turn count)."""

from __future__ import annotations

import json
from pathlib import Path

from tailorbench.datasets import load_benchmark
from tailorbench.evaluate.runner import EvalConfig, load_config, run_eval
from tests.helpers.benchmark_fixtures import make_prefeval


def test_prefeval_pair_view_per_turn_count_and_resume(tmp_path: Path) -> None:
    make_prefeval(tmp_path / "data")
    config = EvalConfig(data=str(tmp_path / "data"), judge="first", data_options={"turns": "0,2"}, n_boot=100)
    out = run_eval(config, tmp_path / "run", progress=False)
    results = json.loads((out / "results.json").read_text())
    assert set(results["metrics"]["explicit"]) == {"turns-0", "turns-2", "all"}
    assert results["cases_judged"] == 2 * 3 * 3 * 2 * 3  # topics, preferences, forms, turn counts, wrong options
    assert load_config(out).data_options == {"turns": "0,2"}
    lines = (out / "predictions.jsonl").read_text().splitlines(keepends=True)
    (out / "predictions.jsonl").write_text("".join(lines[:40]) + lines[40][:11])
    run_eval(load_config(out), out, resume=True, progress=False)
    assert (out / "predictions.jsonl").read_text().splitlines(keepends=True) == lines



def test_pair_view_shows_the_filler_turns(tmp_path: Path) -> None:
    make_prefeval(tmp_path)
    cases = load_benchmark(tmp_path, options={"turns": "0,2", "forms": "persona"}).cases
    later = [c for c in cases if c.tier == "turns-2"]
    assert all(c.persona["Later conversation"].startswith("user: filler question 0.0\nassistant: filler answer")
               for c in later)
    assert all("Later conversation" not in c.persona and "Conversation" in c.persona
               for c in cases if c.tier == "turns-0")
