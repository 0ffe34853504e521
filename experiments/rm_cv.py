"""Cross-validation over user folds for the feature-head reward-model recipes of `tailor train-rm`
(`train_scope: features`), on real data: the recipe of configs/rm-minilm-cpu.yaml was chosen with this script.

The per-answer features (docs/reward_models.md) of every distinct (persona, question, answer) are computed once
with the product code (`HFRewardModel.raw_features`, shipped MiniLM) and cached; each fold then repeats exactly
what `tailor train-rm` does with that recipe: split by user (`split_by_user`), clean the training side
(`clean_pairs`), standardise on the distinct training triples, fit the weights (`fit_feature_weights`), and
score the held-out users, where a case is right when the chosen answer scores strictly higher (a tie is wrong,
as an abstention is in `tailor eval`; both answer orders give the same verdict for a score model). `longer`
is scored on the same held-out cases the same way. The seed changes the user folds (the fit itself is
deterministic), so "mean ± sd over seeds" is over three different partitions of the users.

    .venv/bin/python experiments/rm_cv.py [--data ../shared/data/personafeedback-general-dev] [--folds 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tailorbench.datasets import load_benchmark
from tailorbench.models.reward_hf import FEATURES, HFRewardModel, RewardFormat, Triple
from tailorbench.schema import PairCase
from tailorbench.train.data import clean_pairs, split_by_user
from tailorbench.train.trainer import context_of, fit_feature_weights, resolve_model

TIERS = ("easy", "medium", "hard")
#: name -> (features, feature_l2, flip_rule)
RECIPES: dict[str, tuple[list[str], float, str]] = {
    "length": (["length"], 0.0, "majority"),
    "length+cosine": (["length", "persona_cosine"], 0.0, "majority"),
    "length+overlap": (["length", "persona_overlap"], 0.0, "majority"),
    "length+overlap+cosine": (["length", "persona_overlap", "persona_cosine"], 0.0, "majority"),
    "length+overlap+cosine, flip keep": (["length", "persona_overlap", "persona_cosine"], 0.0, "keep"),
    "length+overlap+cosine, l2 0.01": (["length", "persona_overlap", "persona_cosine"], 0.01, "majority"),
    "all five": (list(FEATURES), 0.0, "majority"),
    "all five, l2 0.01": (list(FEATURES), 0.01, "majority"),
    "all five, flip keep": (list(FEATURES), 0.0, "keep"),
    "length+overlap+share+cosine": (["length", "persona_overlap", "persona_overlap_share", "persona_cosine"], 0.0,
                                    "majority"),
}


def features_for(cases: list[PairCase], model: str, max_length: int, cache: Path) -> dict[Triple, np.ndarray]:
    triples = sorted({(context_of(c, "persona"), c.question, a) for c in cases for a in (c.chosen, c.rejected)},
                     key=lambda t: (t[0] or "", t[1], t[2]))
    key = hashlib.sha256(json.dumps([model, max_length, list(FEATURES), triples]).encode()).hexdigest()[:16]
    path = cache / f"rm_cv_features_{key}.npy"
    if path.is_file():
        raw = np.load(path)
    else:
        scorer = HFRewardModel(resolve_model(model), fmt=RewardFormat(max_length=max_length), batch_size=32)
        tick = time.perf_counter()
        raw = scorer.raw_features(triples, list(FEATURES))
        print(f"features of {len(triples)} triples in {time.perf_counter() - tick:.0f} s ({scorer.precision})")
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, raw)
    return {t: raw[k] for k, t in enumerate(triples)}


def evaluate(held: list[PairCase], margin: np.ndarray) -> dict[str, Any]:
    """Per tier accuracy, and length-balanced accuracy (mean of the accuracy where chosen is longer and where
    it is shorter), of `margin` = score(chosen) - score(rejected)."""
    right = (margin > 0).astype(float)
    sign = np.sign([len(c.chosen) - len(c.rejected) for c in held])
    out: dict[str, Any] = {}
    for tier in (*TIERS, "all"):
        m = np.array([tier == "all" or c.tier == tier for c in held])
        bal = 0.5 * (right[m & (sign > 0)].mean() + right[m & (sign < 0)].mean())
        out[tier] = {"n": int(m.sum()), "accuracy": float(right[m].mean()), "balanced": float(bal)}
    return out


def run_fold(cases: list[PairCase], feats: dict[Triple, np.ndarray], recipe: tuple[list[str], float, str],
             n_folds: int, fold: int, seed: int) -> dict[str, Any]:
    names, l2, flip_rule = recipe
    cols = [list(FEATURES).index(n) for n in names]
    train_raw, held = split_by_user(cases, 0.2, seed, n_folds, fold)
    train, _ = clean_pairs(train_raw, flip_rule)

    def trip(c: PairCase, answer: str) -> Triple:
        return (context_of(c, "persona"), c.question, answer)

    distinct = list(dict.fromkeys(t for c in train for t in (trip(c, c.chosen), trip(c, c.rejected))))
    raw = np.stack([feats[t][cols] for t in distinct])
    mean, std = raw.mean(0), raw.std(0)
    std[std == 0] = 1.0
    row = {t: k for k, t in enumerate(distinct)}
    z = torch.tensor((raw - mean) / std, dtype=torch.float32)
    weights, fit = fit_feature_weights(z, [(row[trip(c, c.chosen)], row[trip(c, c.rejected)]) for c in train],
                                       0.0, l2)

    def score(c: PairCase, answer: str) -> float:
        return float(((feats[trip(c, answer)][cols] - mean) / std) @ weights)

    model = evaluate(held, np.array([score(c, c.chosen) - score(c, c.rejected) for c in held]))
    longer = evaluate(held, np.array([float(len(c.chosen) - len(c.rejected)) for c in held]))
    return {"fold": fold, "seed": seed, "weights": dict(zip(names, weights.tolist())), "train_pairs": len(train),
            "train_accuracy": fit["train_accuracy"], "model": model, "longer": longer}


def summarise(name: str, runs: list[dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    """Per seed: the fold-pooled-by-mean accuracy per tier; then mean and sd over seeds."""
    per_seed: dict[str, list[float]] = {}
    for seed in seeds:
        mine = [r for r in runs if r["seed"] == seed]
        for tier in (*TIERS, "all"):
            per_seed.setdefault(f"rm/{tier}", []).append(100 * np.mean([r["model"][tier]["accuracy"] for r in mine]))
            per_seed.setdefault(f"longer/{tier}", []).append(
                100 * np.mean([r["longer"][tier]["accuracy"] for r in mine]))
            per_seed.setdefault(f"balanced/{tier}", []).append(np.mean([r["model"][tier]["balanced"] for r in mine]))
        gaps = [100 * (r["model"]["all"]["accuracy"] - r["longer"]["all"]["accuracy"]) for r in mine]
        per_seed.setdefault("min_fold_gap", []).append(min(gaps))
        per_seed.setdefault("folds_beaten_by_2", []).append(sum(g >= 2 for g in gaps))
        tier_gaps = [100 * (r["model"][t]["accuracy"] - r["longer"][t]["accuracy"]) for r in mine for t in TIERS]
        per_seed.setdefault("min_fold_tier_gap", []).append(min(tier_gaps))
    return {"recipe": name, **{k: (float(np.mean(v)), float(np.std(v))) for k, v in per_seed.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="../shared/data/personafeedback-general-dev")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cache", default="runs/rm-cv")
    parser.add_argument("--out", default="runs/rm-cv/results.json")
    args = parser.parse_args()
    torch.manual_seed(0)
    cases = load_benchmark(args.data).cases
    feats = features_for(cases, args.model, args.max_length, Path(args.cache))
    results = []
    for name, recipe in RECIPES.items():
        runs = [run_fold(cases, feats, recipe, args.folds, fold, seed)
                for seed in args.seeds for fold in range(args.folds)]
        summary = summarise(name, runs, args.seeds)
        results.append({"summary": summary, "runs": runs})
        cell = {k: f"{v[0]:.1f}±{v[1]:.1f}" if not k.startswith("balanced") else f"{v[0]:.3f}±{v[1]:.3f}"
                for k, v in summary.items() if k != "recipe"}
        print(name, json.dumps(cell))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
