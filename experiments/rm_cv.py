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
import glob
import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tailorbench.datasets import load_benchmark
from tailorbench.schema import DEFAULT_TIERS as TIERS
from tailorbench.schema import PairCase
from tailorbench.train import (
    FEATURES,
    NGRAM_FEATURE,
    HFRewardModel,
    RewardFormat,
    RMTrainConfig,
    Triple,
    bootstrap_ci,
    clean_pairs,
    context_of,
    distinct_triples,
    fit_recipe,
    resolve_model,
    split_by_user,
    tier_accuracy,
)

#: the real data the experiments run on (../shared/data/README.md)
DEV_DATA = "../shared/data/personafeedback-general-dev"

#: the per-answer features computed once and cached (the n-gram head is fitted per fold instead)
DENSE = [f for f in FEATURES if f != NGRAM_FEATURE]
@dataclass(frozen=True)
class Recipe:
    features: list[str]
    feature_l2: float = 0.0
    flip_rule: str = "majority"
    #: `answer_ngrams` only (RMTrainConfig's fields of the same names)
    ngram_l2: float = RMTrainConfig.ngram_l2
    ngram_range: tuple[int, int] = (1, 2)
    ngram_max_features: int = RMTrainConfig.ngram_max_features
    ngram_min_df: int = RMTrainConfig.ngram_min_df
    #: loss weight of a training pair by its tier (missing tiers weigh 1)
    tier_weights: tuple[tuple[str, float], ...] = ()


LOC = ["length", "persona_overlap", "persona_cosine"]
RECIPES: dict[str, Recipe] = {
    "length": Recipe(["length"]),
    "length+cosine": Recipe(["length", "persona_cosine"]),
    "length+overlap": Recipe(["length", "persona_overlap"]),
    "length+overlap+cosine": Recipe(LOC),
    "length+overlap+cosine, flip keep": Recipe(LOC, flip_rule="keep"),
    "length+overlap+cosine, l2 0.01": Recipe(LOC, 0.01),
    "all five": Recipe(DENSE),
    "all five, l2 0.01": Recipe(DENSE, 0.01),
    "all five, flip keep": Recipe(DENSE, flip_rule="keep"),
    "length+overlap+share+cosine": Recipe(["length", "persona_overlap", "persona_overlap_share", "persona_cosine"]),
    # the answer n-gram head (fitted per fold with the other weights)
    "length+ngrams": Recipe(["length", NGRAM_FEATURE]),
    "length+overlap+ngrams": Recipe(["length", "persona_overlap", NGRAM_FEATURE]),
    "length+overlap+cosine+ngrams, l2 0.01": Recipe([*LOC, NGRAM_FEATURE], 0.01),
    "length+overlap+cosine+ngrams, l2 0.01, ngram_l2 6e-5": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_l2=5.7e-5),
    "length+overlap+cosine+ngrams, l2 0.01, ngram_l2 5e-4": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_l2=5e-4),
    "length+overlap+cosine+ngrams 1-3, l2 0.01": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_range=(1, 3)),
    "all five+ngrams, l2 0.01": Recipe([*DENSE, NGRAM_FEATURE], 0.01),
    "length+overlap+cosine+ngrams 1-3, l2 0.01, ngram_l2 1e-4": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_l2=1e-4,
                                                                      ngram_range=(1, 3)),
    "length+overlap+cosine+ngrams 1-3, l2 0.01, ngram_l2 3e-4": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_l2=3e-4,
                                                                      ngram_range=(1, 3)),
    "length+overlap+cosine+ngrams 1-4, l2 0.01": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_range=(1, 4)),
    "length+overlap+cosine+ngrams 2-3, l2 0.01": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_range=(2, 3)),
    "length+overlap+cosine+ngrams 1-3 (150k), l2 0.01": Recipe([*LOC, NGRAM_FEATURE], 0.01, ngram_range=(1, 3),
                                                               ngram_max_features=150_000),
    "length+overlap+cosine+ngrams 1-3, l2 0.01, flip keep": Recipe([*LOC, NGRAM_FEATURE], 0.01, "keep",
                                                                   ngram_range=(1, 3)),
    # round 4: rarer n-grams out (an n-gram must occur in at least 5 / 10 / 20 distinct training answers)
    **{f"length+overlap+cosine+ngrams 1-3, l2 0.01, min_df {d}": Recipe([*LOC, NGRAM_FEATURE], 0.01,
                                                                      ngram_range=(1, 3), ngram_min_df=d)
       for d in (5, 10, 20)},
    "length+overlap+ngrams 1-3, l2 0.01": Recipe(["length", "persona_overlap", NGRAM_FEATURE], 0.01,
                                                 ngram_range=(1, 3)),
}


def all_triples(cases: list[PairCase]) -> list[Triple]:
    """Every distinct (persona, question, answer) of `cases` in the order of the feature caches' rows."""
    return sorted({(context_of(c, "persona"), c.question, a) for c in cases for a in (c.chosen, c.rejected)},
                  key=lambda t: (t[0] or "", t[1], t[2]))


def features_for(cases: list[PairCase], model: str, max_length: int, cache: Path) -> dict[Triple, np.ndarray]:
    triples = all_triples(cases)
    key = hashlib.sha256(json.dumps([model, max_length, DENSE, triples]).encode()).hexdigest()[:16]
    path = cache / f"rm_cv_features_{key}.npy"
    if path.is_file():
        raw = np.load(path)
    else:
        scorer = HFRewardModel(resolve_model(model), fmt=RewardFormat(max_length=max_length), batch_size=32)
        tick = time.perf_counter()
        raw = scorer.raw_features(triples, DENSE)
        print(f"features of {len(triples)} triples in {time.perf_counter() - tick:.0f} s ({scorer.precision})")
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, raw)
    return {t: raw[k] for k, t in enumerate(triples)}


def cached_features(cache: str, names: list[str]) -> np.ndarray:
    """The columns `names` of the one MiniLM feature cache `features_for` wrote in `cache` (rows as
    `all_triples`)."""
    found = glob.glob(f"{cache}/rm_cv_features_*.npy")
    if len(found) != 1:
        raise SystemExit(f"need exactly one MiniLM feature cache in {cache} (run rm_cv.py), found {found}")
    return np.load(found[0])[:, [DENSE.index(n) for n in names]]


def screen_parser(doc: str | None) -> argparse.ArgumentParser:
    """The arguments the screens share: `--data` (the benchmark directory) and `--cache` (rm_cv.py's MiniLM
    feature cache, rebuilt there when missing)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=DEV_DATA)
    parser.add_argument("--cache", default="runs/rm-cv")
    return parser


def screen_inputs(args: argparse.Namespace) -> tuple[list[PairCase], dict[Triple, np.ndarray]]:
    """The cases of `--data` and the shipped recipe's MiniLM features of every distinct triple (cached)."""
    cases = load_benchmark(args.data).cases
    return cases, features_for(cases, "minilm", 256, Path(args.cache))


def evaluate(held: list[PairCase], margin: np.ndarray) -> dict[str, Any]:
    """Per tier accuracy and length-balanced accuracy of `margin` = score(chosen) - score(rejected), by the
    product's cross-fit table (train/cross_fit.py)."""
    table = tier_accuracy(held, margin, 0, 0)
    return {tier: {"n": v["n"], "accuracy": v["accuracy"], "balanced": v["balanced_accuracy"]}
            for tier, v in table.items()}


def screen_row(label: str, results: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """One markdown row of the screens' tables from (model, `longer`) per-fold `evaluate` results: easy / medium
    / hard / all accuracy (mean over folds and seeds), length-balanced accuracy, hard-tier folds above / below
    `longer`, and the smallest fold gap over all tiers (points)."""
    acc = {t: 100 * np.mean([m[t]["accuracy"] for m, _ in results]) for t in (*TIERS, "all")}
    gaps = [m["hard"]["accuracy"] - lo["hard"]["accuracy"] for m, lo in results]
    low = min(100 * (m["all"]["accuracy"] - lo["all"]["accuracy"]) for m, lo in results)
    balanced = np.mean([m["all"]["balanced"] for m, _ in results])
    return (f"| {label} | {acc['easy']:.1f} | {acc['medium']:.1f} | {acc['hard']:.1f} | {acc['all']:.1f} | "
            f"{balanced:.3f} | {sum(g > 0 for g in gaps)} / {sum(g < 0 for g in gaps)} | {low:.1f} |")


def fold_data(cases: list[PairCase], seed: int, n_folds: int, fold: int, flip_rule: str = "majority",
              ) -> tuple[list[PairCase], list[PairCase], list[Triple], list[tuple[int, int]]]:
    """One fold as `tailor train-rm` prepares it: (cleaned training cases, held-out cases, the distinct training
    triples, the training pairs as rows of those triples)."""
    train_raw, held = split_by_user(cases, 0.2, seed, n_folds, fold)
    train, _ = clean_pairs(train_raw, flip_rule)
    distinct, pairs = distinct_triples(train, "persona")
    return train, held, distinct, pairs


@dataclass
class ScreenFold:
    """One fold of the screens (rm_screen, rm_embedding_block, rm_position_blocks): `fold_data` plus the dense
    features of the distinct training triples, standardised (`z`) with their mean and sd."""

    train: list[PairCase]
    held: list[PairCase]
    distinct: list[Triple]
    pairs: list[tuple[int, int]]
    mu: np.ndarray
    sd: np.ndarray
    z: torch.Tensor


def screen_folds(cases: list[PairCase], X: np.ndarray, row_of: dict[Triple, int], seeds: tuple[int, ...] = (0, 1, 2),
                 n_folds: int = 5) -> Iterator[ScreenFold]:
    """The 5 user folds x 3 seeds of rm_cv.py, with `X` (rows as `all_triples`) standardised per fold."""
    for seed in seeds:
        for fold in range(n_folds):
            train, held, distinct, pairs = fold_data(cases, seed, n_folds, fold)
            raw = X[[row_of[t] for t in distinct]]
            mu, sd = raw.mean(0), raw.std(0)
            sd[sd == 0] = 1
            yield ScreenFold(train, held, distinct, pairs, mu, sd, torch.tensor((raw - mu) / sd, dtype=torch.float32))


def paired_difference(cases: list[PairCase], right: dict[str, float], base: dict[str, float]) -> str:
    """Per tier, the mean of `right` - `base` (case id -> seed-averaged verdict, 1 = right) in points, with a
    95% CI from resampling users (2,000 draws) and how many cases changed: the paired test of a screen."""
    users = np.array([c.user_id for c in cases], dtype=object)
    tiers = np.array([c.tier for c in cases], dtype=object)
    diff = np.array([right[c.id] - base[c.id] for c in cases])
    cells = []
    for tier in (*TIERS, "all"):
        m = np.ones(len(cases), bool) if tier == "all" else tiers == tier
        lo, hi = bootstrap_ci(diff[m], users[m], 2000, 0)
        cells.append(f"{tier} {100 * diff[m].mean():+.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}] "
                     f"(cases changed {int((diff[m] != 0).sum())})")
    return "; ".join(cells)


def longer_margin(held: list[PairCase]) -> np.ndarray:
    return np.array([float(len(c.chosen) - len(c.rejected)) for c in held])


@dataclass
class FoldFit:
    """One fold of a recipe: the cleaned training cases, the held-out cases and the model's margins on them."""

    train: list[PairCase]
    held: list[PairCase]
    margins: np.ndarray
    weights: dict[str, float]
    train_accuracy: float


def answer_features(feats: dict[Triple, np.ndarray], cases: list[PairCase], answers: list[str],
                    cols: list[int]) -> np.ndarray:
    """The cached dense features `cols` of each case's answer in `answers` (one per case), as rows."""
    return np.stack([feats[(context_of(c, "persona"), c.question, a)][cols] for c, a in zip(cases, answers)])


def recipe_config(recipe: Recipe) -> RMTrainConfig:
    """The `tailor train-rm` settings of a recipe (the fields `fit_recipe` reads)."""
    return RMTrainConfig(features=list(recipe.features), feature_l2=recipe.feature_l2, flip_rule=recipe.flip_rule,
                         ngram_l2=recipe.ngram_l2, ngram_range=list(recipe.ngram_range),
                         ngram_max_features=recipe.ngram_max_features, ngram_min_df=recipe.ngram_min_df)


def fit_fold(cases: list[PairCase], feats: dict[Triple, np.ndarray], recipe: Recipe, n_folds: int, fold: int,
             seed: int) -> FoldFit:
    """Fit `recipe` on the training users of one fold as `tailor train-rm` does (`fit_recipe`, the product's
    fit) and score its held-out users."""
    cols = [DENSE.index(n) for n in recipe.features if n != NGRAM_FEATURE]
    train, held, distinct, pairs = fold_data(cases, seed, n_folds, fold, recipe.flip_rule)
    by_tier = dict(recipe.tier_weights)
    pair_weights = [by_tier.get(c.tier, 1.0) for c in train] if by_tier else None
    fitted = fit_recipe(recipe_config(recipe), np.stack([feats[t][cols] for t in distinct]),
                        [t[2] for t in distinct], pairs, pair_weights)
    chosen, rejected = [c.chosen for c in held], [c.rejected for c in held]
    margins = fitted.margins(answer_features(feats, held, chosen, cols), answer_features(feats, held, rejected, cols),
                             chosen, rejected)
    return FoldFit(train, held, margins, dict(zip(fitted.dense, fitted.weights.tolist())),
                   fitted.info["train_accuracy"])


def run_fold(cases: list[PairCase], feats: dict[Triple, np.ndarray], recipe: Recipe, n_folds: int, fold: int,
             seed: int) -> dict[str, Any]:
    fit = fit_fold(cases, feats, recipe, n_folds, fold, seed)
    return {"fold": fold, "seed": seed, "weights": fit.weights, "train_pairs": len(fit.train),
            "train_accuracy": fit.train_accuracy, "model": evaluate(fit.held, fit.margins),
            "longer": evaluate(fit.held, longer_margin(fit.held))}


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
    parser.add_argument("--data", default=DEV_DATA)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cache", default="runs/rm-cv")
    parser.add_argument("--out", default="runs/rm-cv/results.json")
    parser.add_argument("--only", nargs="*", help="recipe names to run (default: all)")
    args = parser.parse_args()
    torch.manual_seed(0)
    cases = load_benchmark(args.data).cases
    feats = features_for(cases, args.model, args.max_length, Path(args.cache))
    results = []
    for name, recipe in RECIPES.items():
        if args.only and name not in args.only:
            continue
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
