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
    # one split of one tier: its cell is the run's, shown once as `all` (docs/generation.md)
    assert "| all | 7 | 5 |" in text and "| general/easy |" not in text and "Judge validation" in text


def test_empty_reference_answers(tmp_path: Path) -> None:
    gens = [_gen("a", "model", "ok", "x"), _gen("a", "reference", "empty", ""),
            _gen("b", "model", "empty", ""), _gen("b", "reference", "empty", "")]
    run = tmp_path / "run"
    _write(run, gens, [])
    cell = compute_results(run)["metrics"]["all"]
    assert (cell["win"], cell["tie"], cell["n"], cell["empty_references"]) == (1, 1, 2, 2)


def _chosen(case: str, order: str, winner: str, gen: int = 10, ref: int = 10) -> dict[str, Any]:
    row = _verdict(case, order, winner, gen=gen, ref=ref)
    row["choice"] = "A" if (winner == "generated") == (order == "AB") else "B"
    return row


def test_judge_reliability_and_self_preference_equal_a_hand_computation(tmp_path: Path) -> None:
    gens = [g for c in ("c1", "c2", "c3") for g in (_gen(c, "model", "ok", "a" * 20), _gen(c, "reference", "ok", "b"))]
    verdicts = [
        _chosen("c1", "AB", "generated", gen=20, ref=1), _chosen("c1", "BA", "generated", gen=20, ref=1),
        _chosen("c2", "AB", "generated", gen=20, ref=1), _chosen("c2", "BA", "reference", gen=20, ref=1),  # flip
        _chosen("c3", "AB", "reference", gen=20, ref=1), _chosen("c3", "BA", "reference", gen=20, ref=1),
    ]
    run = tmp_path / "run"
    _write(run, gens, verdicts)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(model="openai:m", reference="openai:other", judge="llm:openai:m")  # the judge wrote "generated"
    (run / "manifest.json").write_text(json.dumps(manifest))
    res = compute_results(run)
    cell = res["reliability"]["cells"]["all"]
    assert cell["position"]["flip_rate"] == pytest.approx(1 / 3)  # c2's winner changes with the order
    # first shown picked: c1 AB(A) BA(B) -> 1/2; c2 AB(A) BA(A) -> 1; c3 AB(B) BA(A) -> 1/2
    assert cell["position"]["p_first"]["value"] == pytest.approx((0.5 + 1 + 0.5) / 3)
    # the generated answer is always the longer: P(longer) = the generated answer's share of wins
    assert cell["length"]["p_longer"]["value"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert cell["calibration"] is None
    own = res["self_preference"]
    assert own["own_answer"] == "generated" and own["n"] == 3
    assert own["own_win_rate"] == pytest.approx(0.5) and own["difference"] == pytest.approx(0.0)
    assert any("self-preference" in w for w in res["warnings"])
    write_reports([res], run)
    text = (run / "report.md").read_text(encoding="utf-8")
    assert "### Judge reliability" in text and "self-preference (generated answers are the judge's)" in text
    manifest.update(judge="llm:openai:third")
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert compute_results(run)["self_preference"] is None  # a judge that wrote neither side
