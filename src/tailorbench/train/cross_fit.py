"""Cross-fitted accuracy on unseen users (`cross_fit_folds`): a held-out split of a small benchmark is a noisy
estimate (the dev split's 20% holds 130 hard cases, where one case is 0.8 points), so a feature-head recipe can
also be scored on *every* user of the data by a model that never saw that user. The users are cut into k seeded
folds (`user_folds`); for each fold the recipe is fitted on the other folds, exactly as `tailor train-rm` fits
it (cleaning, standardisation, `fit_features`), and scores the fold. The pooled verdicts give per-tier accuracy,
the `longer` baseline on the same cases, their difference with a user-bootstrap 95% CI, and the per-fold
figures. The checkpoint that `tailor train-rm` saves is not touched: this estimates the recipe, not that model.
With `research_figures` the result also holds the research figures of docs/experiments.md: accuracy by overlap
class (`overlap_accuracy`) and the odds of a held-out split of the config's size (`split_power`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from tailorbench.bootstrap import bootstrap_ci
from tailorbench.schema import DEFAULT_TIERS, PairCase, in_declared_order
from tailorbench.train import features
from tailorbench.train.config import RMTrainConfig
from tailorbench.train.data import clean_pairs, distinct_triples, split_by_user

#: seeded user subsets drawn by `split_power` (its Monte Carlo error is below 0.005 at this count)
SPLIT_DRAWS = 10_000


def tier_accuracy(cases: Sequence[PairCase], margins: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    """Per tier and overall: accuracy of `margins` = score(chosen) - score(rejected) (a tie is wrong, as an
    abstention is in `tailor eval`), length-balanced accuracy, `longer` on the same cases, and the difference
    with a 95% CI from resampling whole users."""
    right = (np.asarray(margins) > 0).astype(float)
    sign = np.sign([len(c.chosen) - len(c.rejected) for c in cases])
    longer = (sign > 0).astype(float)
    users = np.array([c.user_id for c in cases], dtype=object)
    tiers = np.array([c.tier for c in cases], dtype=object)
    out: dict[str, Any] = {}
    for tier in (*in_declared_order(DEFAULT_TIERS, tiers.tolist()), "all"):
        m = np.ones(len(cases), bool) if tier == "all" else tiers == tier
        if not m.any():
            continue
        by_sign = [right[m & (sign == s)] for s in (1, -1)]
        lo, hi = bootstrap_ci(right[m] - longer[m], users[m], n_boot, seed) if n_boot else (None, None)
        out[tier] = {
            "n": int(m.sum()), "accuracy": float(right[m].mean()), "longer": float(longer[m].mean()),
            "difference": float((right[m] - longer[m]).mean()), "difference_ci": [lo, hi],
            "won": int((right[m] > longer[m]).sum()), "lost": int((right[m] < longer[m]).sum()),
            "balanced_accuracy": float(np.mean([b.mean() for b in by_sign])) if all(len(b) for b in by_sign)
            else None,
        }
    return out


def overlap_accuracy(cases: Sequence[PairCase], margins: np.ndarray) -> dict[str, Any]:
    """Per tier, accuracy and `longer` on the rows another tier repeats, contradicts (labels swapped) or does
    not hold (`tier_overlap`): a score model is right on exactly one row of a contradicted pair, so a tier's
    figure depends on how many of them it holds (docs/experiments.md, reward model round 5)."""
    from tailorbench.datasets.pairs import tier_overlap

    out: dict[str, Any] = {}
    for case, kind, margin in zip(cases, tier_overlap(cases), margins, strict=True):
        cell = out.setdefault(case.tier, {}).setdefault(kind, {"n": 0, "right": 0, "longer_right": 0})
        cell["n"] += 1
        cell["right"] += int(margin > 0)
        cell["longer_right"] += int(len(case.chosen) > len(case.rejected))
    return {tier: {kind: {"n": c["n"], "accuracy": c["right"] / c["n"], "longer": c["longer_right"] / c["n"]}
                   for kind, c in sorted(row.items())} for tier, row in out.items()}


def split_power(cases: Sequence[PairCase], margins: np.ndarray, held_users: int, draws: int,
                seed: int, fresh: bool = False) -> dict[str, dict[str, float]]:
    """How often a held-out split of `held_users` users, drawn as the config draws it (whole users, uniformly
    without replacement), would show the recipe ahead of, level with or behind `longer` on each tier, taking
    the out-of-fold verdicts `margins` as what each user would give. A small split can tie or lose a tier on
    which the recipe is ahead over all users; this says how likely that is (Monte Carlo, `draws` seeded
    subsets; a tie is wrong, as in `tier_accuracy`). `fresh` draws users with replacement instead: the odds for
    `held_users` new users like these (a bootstrap), for a check on users outside the data."""
    users = sorted({c.user_id for c in cases})
    index = {u: i for i, u in enumerate(users)}
    row = np.array([index[c.user_id] for c in cases])
    gain = (np.asarray(margins) > 0).astype(np.int64) - np.array([len(c.chosen) > len(c.rejected) for c in cases],
                                                                 dtype=np.int64)
    tiers = np.array([c.tier for c in cases], dtype=object)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(users), (draws, held_users)) if fresh else \
        rng.random((draws, len(users))).argsort(axis=1)[:, :held_users]
    out: dict[str, dict[str, float]] = {}
    for tier in (*in_declared_order(DEFAULT_TIERS, tiers.tolist()), "all"):
        m = np.ones(len(cases), bool) if tier == "all" else tiers == tier
        if not m.any():
            continue
        per_user = np.zeros(len(users), np.int64)
        np.add.at(per_user, row[m], gain[m])
        total = per_user[picks].sum(axis=1)
        out[tier] = {"ahead": float((total > 0).mean()), "level": float((total == 0).mean()),
                     "behind": float((total < 0).mean())}
    return out


def cross_fit(cfg: RMTrainConfig, scorer: Any, cases: Sequence[PairCase], held_users: int = 0) -> dict[str, Any]:
    """Pooled out-of-fold evaluation of the feature-head recipe `cfg` over the users of `cases` (see the module
    docstring). `scorer` is the loaded `HFRewardModel` (its embedding cache is shared by all folds); its fitted
    format and n-gram head are restored afterwards. `held_users`: the size of the checkpoint's held-out split
    of the same users, for `split_power` (0: none). `tiers_by_overlap` and `split_power` are None unless
    `cfg.research_figures`."""
    k = cfg.cross_fit_folds
    saved = copy.deepcopy(scorer.fmt), scorer.ngrams
    margins = np.zeros(len(cases))
    position = {id(c): i for i, c in enumerate(cases)}
    folds: list[dict[str, Any]] = []
    try:
        for fold in range(k):
            train_raw, held = split_by_user(cases, 0.0, cfg.seed, k, fold)
            train, _ = clean_pairs(train_raw, cfg.flip_rule)
            triples, pairs = distinct_triples(train, cfg.setting)
            scorer.fmt = copy.deepcopy(saved[0])
            features.fit_features(cfg, scorer, triples, pairs)
            held_triples, held_pairs = distinct_triples(held, cfg.setting)
            scores, _ = scorer.score(held_triples)
            fold_margins = np.array([scores[a] - scores[b] for a, b in held_pairs])
            margins[[position[id(c)] for c in held]] = fold_margins
            table = tier_accuracy(held, fold_margins, 0, cfg.seed)
            folds.append({"fold": fold, "train_pairs": len(train), "users": len({c.user_id for c in held}),
                          **{t: {key: v[key] for key in ("n", "accuracy", "longer")} for t, v in table.items()}})
    finally:
        scorer.fmt, scorer.ngrams = saved
    gaps = [100 * (f["all"]["accuracy"] - f["all"]["longer"]) for f in folds]
    tier_gaps = [100 * (f[t]["accuracy"] - f[t]["longer"]) for f in folds for t in f
                 if isinstance(f[t], dict) and t != "all"]
    return {
        "folds": k, "seed": cfg.seed, "users": len({c.user_id for c in cases}), "cases": len(cases),
        "tiers": tier_accuracy(cases, margins, cfg.n_boot, cfg.seed),
        "tiers_by_overlap": overlap_accuracy(cases, margins) if cfg.research_figures else None,
        "split_power": {"held_users": held_users, "draws": SPLIT_DRAWS,
                        "tiers": split_power(cases, margins, held_users, SPLIT_DRAWS, cfg.seed)}
        if held_users and cfg.research_figures else None,
        "per_fold": folds,
        "min_fold_gap_points": min(gaps), "min_fold_tier_gap_points": min(tier_gaps) if tier_gaps else None,
    }


def note_research_figures(bar: Any, cross: dict[str, Any]) -> None:
    """`research_figures`: the odds of a held-out split of the config's size, and each tier by overlap class."""
    power = cross["split_power"]
    if power:  # how often a held-out split of the config's size would show each tier ahead of `longer`
        bar.note(f"  a random split holding out {power['held_users']} users shows rm ahead of / level with / "
                 "behind longer: " + ", ".join(f"{k} {100 * v['ahead']:.0f}/{100 * v['level']:.0f}/"
                                               f"{100 * v['behind']:.0f}%" for k, v in power["tiers"].items()))
    shared = {t: row for t, row in cross["tiers_by_overlap"].items() if set(row) - {"unique"}}
    for tier, row in shared.items():  # where a tier's figure comes from when other tiers hold its pairs
        bar.note(f"  {tier} by rows shared with other tiers: " + ", ".join(
            f"{k} ({v['n']}) {100 * v['accuracy']:.1f} vs {100 * v['longer']:.1f}" for k, v in row.items()))
