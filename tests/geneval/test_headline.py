"""The gen-eval report opens with its headline (docs/generation.md, "Headline"): the best run's win rate with its
95% CI and its length-controlled win rate, each run against parity with the reference, every win rate below parity
flagged, and a judge that was not validated named; every number of it is a cell of the report's tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tailorbench.geneval.report import write_reports
from tailorbench.geneval.results import compute_results
from tests.helpers.headline_check import headline_and_tables, missing_numbers

TIERS = ("easy", "medium")


def _run(root: Path, name: str, wins: int, cases: int = 12) -> dict[str, Any]:
    """A gen-eval run of `cases` cases (half easy, half medium) whose generated answer wins the first `wins`."""
    run = root / name
    run.mkdir(parents=True)
    manifest = {"kind": "gen-eval", "model": name, "reference": "chosen", "judge": "judge", "setting": "persona",
                "seed": 0, "n_cases": cases, "config": {"n_boot": 200}, "status": "finished"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "judge_validation.json").write_text(json.dumps({"source": None, "warnings": ["not validated"]}))
    gens, verdicts = [], []
    for k in range(cases):
        tier = TIERS[k % 2]
        for role, length in (("model", 20 + k), ("reference", 20)):
            gens.append({"case_id": f"c{k}", "role": role, "source": "x", "split": "general", "tier": tier,
                         "user_id": f"u{k % 3}", "status": "ok", "answer": "a" * length, "length": length,
                         "mentions": [], "truncated": False, "error": None, "cached": False})
        for order in ("AB", "BA"):
            verdicts.append({"case_id": f"c{k}", "order": order, "split": "general", "tier": tier,
                             "user_id": f"u{k % 3}", "status": "ok", "winner": "generated" if k < wins else "reference",
                             "len_generated": 20 + k, "len_reference": 20, "cached": False})
    (run / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gens))
    (run / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in verdicts))
    return compute_results(run)


@pytest.mark.parametrize("merged", [False, True])
def test_gen_eval_report_opens_with_its_headline(tmp_path: Path, merged: bool) -> None:
    strong, weak = _run(tmp_path, "strong", wins=11), _run(tmp_path, "weak", wins=1)
    out = tmp_path / "report"
    out.mkdir()
    runs = [strong, weak] if merged else [weak]
    write_reports(runs, out)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.splitlines()[2] == "## Headline"
    headline, _ = headline_and_tables(report)
    best = strong if merged else weak
    total = best["metrics"]["all"]
    assert f"Best: `{best['model']} vs chosen (persona)`, win rate {100 * total['win_rate']:.1f} [" in headline
    assert "loses to the reference: `weak vs chosen (persona)`" in headline
    assert "overall win rate below parity (50%): `weak vs chosen (persona)`" in headline
    if merged:
        assert "beats the reference: `strong vs chosen (persona)`" in headline
    assert "the judge `judge` was not validated" in headline
    missing, said = missing_numbers(report)
    assert not missing, (missing, said)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index("<h2>Headline</h2>") < page.index("Win rate = mean case score")


def test_cells_that_repeat_another_on_the_same_cases_are_left_out(tmp_path: Path) -> None:
    """One split: its `all` is the run's `all` again with another bootstrap draw, so neither table nor headline
    shows `general/all`; its tiers stay."""
    out = tmp_path / "report"
    out.mkdir()
    write_reports([_run(tmp_path, "one-split", wins=6)], out)
    report = (out / "report.md").read_text(encoding="utf-8")
    rows = [line.split(" | ")[0].lstrip("| ") for line in report.splitlines() if line.startswith("| ")]
    assert "all" in rows and "general/easy" in rows and "general/medium" in rows
    assert "general/all" not in rows and "general/all" not in report
