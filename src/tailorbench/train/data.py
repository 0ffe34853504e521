"""Training pairs for `tailor train-rm`: from any benchmark the readers load, native PairCase JSONL, or scored
(HelpSteer2-style) preference data; cleaned (repeats removed, label flips resolved by a documented rule) and
split by user, with a check that no user lands on both sides. Every dropped row is counted in the stats.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.personas import render_persona
from tailorbench.schema import DEFAULT_TIERS, PairCase, in_declared_order
from tailorbench.train.config import RMTrainConfig


def load_cases(spec: str, data_format: str = "auto", score_column: str = "helpfulness",
               min_gap: float = 2.0) -> tuple[list[PairCase], dict[str, Any]]:
    """PairCases plus what the readers saw (rows, skipped rows, layout), through the benchmark loader: `scored`
    names the scored layout (datasets/scored.py), `benchmark` any other, `auto` detects it."""
    from tailorbench.datasets import find_layout, load_benchmark

    path = Path(spec).expanduser()
    scored = data_format == "scored" or (
        data_format == "auto" and path.is_file() and find_layout(path).name == "scored")
    if scored:
        benchmark = load_benchmark(path, layout="scored",
                                   options={"score_column": score_column, "min_gap": min_gap})
        return benchmark.cases, {"format": "scored", **benchmark.layout_stats}
    benchmark = load_benchmark(spec)
    stats = benchmark.stats()
    out = {"format": "benchmark", "layout": stats["layout"], "rows": stats["rows"],
           "skipped_rows": stats["skipped_rows"]}
    difficulty = list(benchmark.difficulty or benchmark.tiers)
    if tuple(difficulty) != DEFAULT_TIERS:  # the flip rules easier / harder follow the benchmark's order
        out["tier_difficulty"] = difficulty
    return benchmark.cases, out


def _tier_rank(cases: Sequence[PairCase], ranks: Mapping[str, int] | None = None) -> dict[str, int]:
    """Each tier's rank from easiest (0): `ranks` (a benchmark's difficulty order) or PersonaFeedback's order,
    then any other tier in order of appearance."""
    order = sorted(ranks, key=lambda t: ranks[t]) if ranks else DEFAULT_TIERS
    return {tier: k for k, tier in enumerate(in_declared_order(order, (c.tier for c in cases)))}


def clean_pairs(cases: Sequence[PairCase], flip_rule: str = "majority", tier_rank: Mapping[str, int] | None = None,
                ) -> tuple[list[PairCase], dict[str, int]]:
    """Remove repeated rows (same user, question, chosen, rejected: the first is kept) and resolve pairs seen
    with both labels: `majority` keeps the label seen more often (its first row) and drops ties, `drop`
    drops every such pair, `keep` keeps both labels (they cancel out in the loss), `easier` / `harder` keep
    the label of the easiest / hardest tier the pair has (dropping it when both labels share that tier), by
    `tier_rank` (tier -> rank, easiest 0: a benchmark's difficulty order) or PersonaFeedback's order."""
    seen: set[tuple[str, str, str, str]] = set()
    unique: list[PairCase] = []
    for case in cases:
        key = (case.user_id, case.question, case.chosen, case.rejected)
        if key in seen:
            continue
        seen.add(key)
        unique.append(case)
    votes: Counter[tuple[str, str, str, str]] = Counter(
        (c.user_id, c.question, c.chosen, c.rejected) for c in cases
    )
    by_tier = flip_rule in ("easier", "harder")
    # per label: the rank of the easiest (`easier`, negated so that larger wins) or hardest tier it appears in
    best: dict[tuple[str, str, str, str], int] = {}
    ranks = _tier_rank(cases, tier_rank) if by_tier else {}
    for case in cases if by_tier else ():
        key = (case.user_id, case.question, case.chosen, case.rejected)
        rank = ranks[case.tier] * (-1 if flip_rule == "easier" else 1)
        best[key] = max(best.get(key, rank), rank)
    out: list[PairCase] = []
    flipped_pairs = dropped_flip = 0
    for case in unique:
        key = (case.user_id, case.question, case.chosen, case.rejected)
        other = (case.user_id, case.question, case.rejected, case.chosen)
        if other not in votes or flip_rule == "keep":
            out.append(case)
            continue
        flipped_pairs += 1
        if flip_rule == "majority":
            kept = votes[key] > votes[other]
        else:
            kept = by_tier and best[key] > best[other]
        if kept:
            out.append(case)
        else:
            dropped_flip += 1
    return out, {
        "rows_in": len(cases),
        "repeated_rows_removed": len(cases) - len(unique),
        "rows_in_label_flipped_pairs": flipped_pairs,
        "rows_dropped_by_flip_rule": dropped_flip,
        "rows_out": len(out),
    }


def user_folds(users: Sequence[str], n_folds: int, seed: int) -> list[list[str]]:
    """Seeded, disjoint user folds of near-equal size (sorted first, so input order does not matter)."""
    ordered = sorted(set(users))
    random.Random(seed).shuffle(ordered)
    return [ordered[k::n_folds] for k in range(n_folds)]


def split_by_user(cases: Sequence[PairCase], eval_fraction: float, seed: int, n_folds: int = 0,
                  fold: int = 0) -> tuple[list[PairCase], list[PairCase]]:
    """(train, eval): whole users go to one side. With folds, fold `fold` is the eval side."""
    users = [c.user_id for c in cases]
    if n_folds > 1:
        held = set(user_folds(users, n_folds, seed)[fold])
    else:
        ordered = sorted(set(users))
        random.Random(seed).shuffle(ordered)
        held = set(ordered[: round(eval_fraction * len(ordered))])
    train = [c for c in cases if c.user_id not in held]
    evaluation = [c for c in cases if c.user_id in held]
    check_disjoint(train, evaluation)
    return train, evaluation


def check_disjoint(train: Sequence[PairCase], evaluation: Sequence[PairCase]) -> None:
    """Refuse a split where a user is on both sides (their reused answers would leak into the score)."""
    both = sorted({c.user_id for c in train} & {c.user_id for c in evaluation})
    if both:
        shown = ", ".join(both[:5]) + (f" and {len(both) - 5} more" if len(both) > 5 else "")
        raise ConfigError(f"{len(both)} user(s) are in both the training and the evaluation data: {shown}")


def sample_pairs(cases: list[PairCase], limit: int | None, seed: int) -> list[PairCase]:
    if limit is None or limit >= len(cases):
        return cases
    keep = set(random.Random(seed).sample(range(len(cases)), limit))
    return [c for k, c in enumerate(cases) if k in keep]


def context_of(case: PairCase, setting: str) -> str | None:
    """What the reward model sees besides question and answer: the rendered persona, or nothing."""
    return render_persona(case.persona) if setting == "persona" and case.persona else None


def distinct_triples(cases: Sequence[PairCase], setting: str) -> tuple[list[Any], list[tuple[int, int]]]:
    """Every distinct (context, question, answer) of the cases once (the real data reuses answers across a
    user's cases), and each case as its (chosen row, rejected row)."""
    contexts = {c.user_id: context_of(c, setting) for c in cases}
    both = [((contexts[c.user_id], c.question, c.chosen), (contexts[c.user_id], c.question, c.rejected))
            for c in cases]
    triples = list(dict.fromkeys(t for pair in both for t in pair))
    row = {t: k for k, t in enumerate(triples)}
    return triples, [(row[a], row[b]) for a, b in both]


def prepare_data(cfg: RMTrainConfig) -> tuple[list[PairCase], list[PairCase], dict[str, Any]]:
    """(train, eval, stats): loaded, cleaned (train side only; eval stays as the benchmark defines it),
    split by user and checked for user overlap."""
    assert cfg.data is not None
    cases, load_stats = load_cases(cfg.data, cfg.data_format, cfg.score_column, cfg.min_score_gap)
    if cfg.eval_data:
        train_raw = cases
        eval_cases, _ = load_cases(cfg.eval_data, cfg.data_format, cfg.score_column, cfg.min_score_gap)
        check_disjoint(train_raw, eval_cases)
    else:
        train_raw, eval_cases = split_by_user(cases, cfg.eval_fraction, cfg.seed, cfg.n_folds, cfg.fold)
    difficulty = load_stats.get("tier_difficulty")
    ranks = {tier: k for k, tier in enumerate(difficulty)} if difficulty else None
    train, clean_stats = clean_pairs(train_raw, cfg.flip_rule, ranks)
    sampled = sample_pairs(train, cfg.max_train_pairs, cfg.seed)
    stats = {
        "load": load_stats,
        "clean": clean_stats,
        "train_pairs": len(sampled),
        "train_pairs_not_sampled": len(train) - len(sampled),
        "train_users": len({c.user_id for c in sampled}),
        "eval_pairs": len(eval_cases),
        "eval_users": len({c.user_id for c in eval_cases}),
    }
    if not sampled:
        raise ConfigError("no training pairs left after the split and cleaning")
    return sampled, eval_cases, stats
