"""How far a gen-eval judge's verdicts can be trusted: the reliability table of `tailor eval` computed on its
verdicts (`evaluate/reliability.py`; there is no human label here, so "correct" reads "picked the generated
answer": the flip rate is the share of cases whose winner changes with the order, P(first shown) and P(longer)
as in eval, no calibration), and self-preference when the judge's model is one of the two generators
(docs/generation.md, "Judge reliability")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tailorbench.bootstrap import bootstrap_ci, seed_for
from tailorbench.evaluate.reliability import reliability
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS


def as_pairwise(verdicts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """gen-eval verdict lines in the shape the reliability table reads: the generated answer in the place of the
    human-preferred one."""
    return [{"case_id": r["case_id"], "order": r["order"], "split": r["split"], "tier": r["tier"],
             "status": r["status"], "choice": r.get("choice"), "correct": r.get("winner") == "generated",
             "len_chosen": int(r.get("len_generated") or 0), "len_rejected": int(r.get("len_reference") or 0)}
            for r in verdicts]


def judge_reliability(verdicts: Sequence[Mapping[str, Any]], n_boot: int, seed: int,
                      names: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    names = names or {}
    return reliability(as_pairwise(verdicts), None, n_boot=n_boot, seed=seed,
                       splits=names.get("splits", DEFAULT_SPLITS), tiers=names.get("tiers", DEFAULT_TIERS))


def judge_model(judge: str) -> str | None:
    """The model spec inside an `llm:MODEL` judge spec (None for judges without a generating model)."""
    return judge[4:] if judge.startswith("llm:") else None


def self_preference(verdicts: Sequence[Mapping[str, Any]], judge: str, model: str, reference: str,
                    n_boot: int, seed: int) -> dict[str, Any] | None:
    """When the judge's model wrote one of the two answers: how often it picks its own answer (a case weighs 1:
    the mean over its valid verdicts, both orders) against the other generator's, paired by case, with a case
    bootstrap CI of the difference. None when the judge is not one of the generators."""
    own_model = judge_model(judge)
    if own_model is None or own_model not in (model, reference):
        return None
    own = "generated" if own_model == model else "reference"
    per_case: dict[str, list[float]] = {}
    for r in verdicts:
        if r.get("winner") in ("generated", "reference"):
            per_case.setdefault(str(r["case_id"]), []).append(float(r["winner"] == own))
    shares = np.array([np.mean(v) for v in per_case.values()])
    if not len(shares):
        return {"own_answer": own, "n": 0, "own_win_rate": None, "other_win_rate": None, "difference": None,
                "ci": [None, None]}
    lo, hi = bootstrap_ci(2.0 * shares - 1.0, None, n_boot, seed_for(seed, "self_preference"))
    rate = float(shares.mean())
    return {"own_answer": own, "n": len(shares), "own_win_rate": rate, "other_win_rate": 1.0 - rate,
            "difference": 2.0 * rate - 1.0, "ci": [lo, hi]}
