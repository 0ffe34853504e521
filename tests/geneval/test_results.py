"""Scoring and accounting of a gen-eval run directory, on hand-built generations and verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tailorbench.geneval.report import write_reports
from tailorbench.geneval.results import compute_results


def _gen(case: str, role: str, status: str, answer: str | None, mentions: int = 0) -> dict[str, Any]:
    return {"case_id": case, "role": role, "source": "x", "split": "general", "tier": "easy", "user_id": "u",
            "status": status, "answer": answer, "length": None if answer is None else len(answer),
            "mentions": [{"key": "k", "value": "v", "match": "v"}] * mentions, "truncated": False,
            "error": "boom" if status == "failed" else None, "cached": False}


def _verdict(case: str, order: str, winner: str | None, status: str = "ok", gen: int = 10,
             ref: int = 10) -> dict[str, Any]:
    return {"case_id": case, "order": order, "split": "general", "tier": "easy", "user_id": "u", "status": status,
            "winner": winner, "len_generated": gen, "len_reference": ref, "cached": False}


def _write(run: Path, gens: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> None:
    run.mkdir()
    manifest = {"kind": "gen-eval", "model": "m", "reference": "chosen", "judge": "j", "setting": "persona",
                "seed": 0, "n_cases": 7, "config": {"n_boot": 200}, "status": "finished"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "judge_validation.json").write_text(json.dumps({"source": None, "warnings": ["not validated"]}))
    (run / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gens))
    (run / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in verdicts))


def test_outcomes_and_accounting(tmp_path: Path) -> None:
    gens = [
        _gen("win", "model", "ok", "a" * 30, mentions=2), _gen("win", "reference", "ok", "b" * 10),
        _gen("tie", "model", "ok", "a" * 10), _gen("tie", "reference", "ok", "b" * 10),
        _gen("loss", "model", "ok", "a" * 5), _gen("loss", "reference", "ok", "b" * 10),
        _gen("empty", "model", "empty", ""), _gen("empty", "reference", "ok", "b" * 10),
        _gen("failed", "model", "failed", None), _gen("failed", "reference", "ok", "b"),
        _gen("unjudged", "model", "ok", "a"), _gen("unjudged", "reference", "ok", "b"),
        _gen("abstain", "model", "ok", "a" * 10, mentions=1), _gen("abstain", "reference", "ok", "b" * 10),
    ]
    verdicts = [
        _verdict("win", "AB", "generated", gen=30), _verdict("win", "BA", "generated", gen=30),
        _verdict("tie", "AB", "generated"), _verdict("tie", "BA", "reference"),
        _verdict("loss", "AB", "reference", gen=5), _verdict("loss", "BA", "reference", gen=5),
        _verdict("unjudged", "AB", None, "invalid"), _verdict("unjudged", "BA", None, "failed"),
        _verdict("abstain", "AB", None, "abstain"), _verdict("abstain", "BA", "generated"),
    ]
    run = tmp_path / "run"
    _write(run, gens, verdicts)
    res = compute_results(run)
    cell = res["metrics"]["general"]["easy"]
    assert res["metrics"]["all"]["n"] == res["metrics"]["general"]["all"]["n"] == cell["n"]
    # scored: win 1, tie 1/2, loss 0, empty 0, abstain (1/2 + 1)/2 = 3/4
    assert (cell["n_cases"], cell["n"], cell["win"], cell["tie"], cell["loss"]) == (7, 5, 1, 2, 2)
    assert cell["win_rate"] == pytest.approx((1 + 0.5 + 0 + 0 + 0.75) / 5)
    assert (cell["gen_failed"], cell["unjudged"], cell["empty_answers"]) == (1, 1, 1)
    assert cell["verdict_status"] == {"abstain": 1, "failed": 1, "invalid": 1, "ok": 7}
    assert cell["mention_share"] == pytest.approx(2 / 6)  # answered = ok or empty
    assert (cell["win_rate_with_mentions"], cell["n_with_mentions"]) == (pytest.approx(0.875), 2)
    assert cell["judge_consistency"] == pytest.approx(2 / 3)  # win and loss consistent, tie not
    assert cell["length_generated"]["n"] == 6
    warnings = " ".join(res["warnings"])
    assert "1 generation(s)" in warnings and "no valid verdict" in warnings and "not validated" in warnings
    write_reports([res], run)
    text = (run / "report.md").read_text(encoding="utf-8")
    assert "| general/easy | 7 | 5 |" in text and "Judge validation" in text


def test_empty_reference_answers(tmp_path: Path) -> None:
    gens = [_gen("a", "model", "ok", "x"), _gen("a", "reference", "empty", ""),
            _gen("b", "model", "empty", ""), _gen("b", "reference", "empty", "")]
    run = tmp_path / "run"
    _write(run, gens, [])
    cell = compute_results(run)["metrics"]["all"]
    assert (cell["win"], cell["tie"], cell["n"], cell["empty_references"]) == (1, 1, 2, 2)
