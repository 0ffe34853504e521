"""Run in the arena-rank venv (scripts/ensure_arena_rank_venv.py) by tests/arena/test_arena_rank.py: LMArena's
arena-rank fits the battles of IN.json and writes its ratings to OUT.json.

    ARENA_RANK_PYTHON tests/arena/arena_rank_checks.py IN.json OUT.json

IN.json: {"battles": [{"model_a", "model_b", "winner" ("model_a" | "model_b" | "tie" | "both_bad"), "length"}]}
where `length` is (len_a - len_b) / (len_a + len_b + 1). OUT.json: the plain Bradley–Terry ratings (arena-rank's
defaults but tighter optimiser tolerances, so the comparison measures the estimate, not L-BFGS's stopping point),
the style-controlled ratings and coefficient with the penalty off and without inverse-propensity reweighting (the
plain maximum-likelihood estimate the arena fits), and the same with arena-rank's default penalty (reg 1.0).
Only arena-rank, jax, numpy and pandas are imported: tailorbench is not installed there.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset

TIGHT: dict[str, Any] = {"gtol": 1e-13, "ftol": 1e-16, "max_iter": 10_000}


def main(src: str, dst: str) -> None:
    with open(src, encoding="utf-8") as fh:
        df = pd.DataFrame(json.load(fh)["battles"])
    plain = PairDataset.from_pandas(df)
    bt = BradleyTerry(n_competitors=len(plain.competitors), **TIGHT).compute_ratings_and_cis(plain)
    out: dict[str, Any] = {"plain": dict(zip(bt["competitors"], map(float, bt["ratings"])))}
    for name, reg in (("style", 0.0), ("style_default_penalty", 1.0)):
        ctx = ContextualPairDataset.from_pandas(df, feature_cols=["length"], reweighted=False)
        cbt = ContextualBradleyTerry(n_competitors=len(ctx.competitors), n_features=1, reg=reg, **TIGHT)
        res = cbt.compute_ratings_and_cis(ctx)
        out[name] = {"ratings": dict(zip(res["competitors"], map(float, res["ratings"]))),
                     "coefficient": float(res["coeffs"][0])}
    with open(dst, "w", encoding="utf-8") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
