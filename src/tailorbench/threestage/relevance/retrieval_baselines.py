"""Stage-2 baselines: BM25 over a user's attributes and embedding similarity, each turned into yes/no votes by a
threshold chosen on a validation split of users (never on the users it is scored on).

Why thresholds on held-out users: a score is not a vote; picking the cut-off on the same items it is evaluated on
would flatter the baseline. Votes are written in the Re-Centering model shape for the test users only, so
`tailor stages report-relevance` compares them with the humans like any judge. BM25 is memory/'s bm25s index with the
CJK-aware tokenizer; embeddings are models/encoder_hf (default the shipped MiniLM).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tailorbench.agreement.ratings import RatingSet
from tailorbench.errors import ConfigError
from tailorbench.files import Output
from tailorbench.threestage.recentering_formats import RelevanceItem, item_key, write_votes
from tailorbench.threestage.relevance.analysis import human_gold
from tailorbench.threestage.statistics import choose_threshold, split_users

METHODS = ("bm25", "embedding")


def attribute_scores(items: Sequence[RelevanceItem], method: str, encoder: Any = None) -> list[np.ndarray]:
    """One score per attribute of each item: BM25 of the prompt against the user's attributes, or cosine."""
    if method == "bm25":
        from tailorbench.memory.retrieval import BM25Index

        return [BM25Index(it.attributes).scores(it.prompt).astype(float) for it in items]
    if method == "embedding":
        if encoder is None:
            from tailorbench.models.encoder_hf import HFEncoder

            encoder = HFEncoder()
        prompts, _ = encoder.encode([it.prompt for it in items])
        flat = [a for it in items for a in it.attributes]
        vectors, _ = encoder.encode(flat)
        out, start = [], 0
        for it, q in zip(items, prompts):
            n = len(it.attributes)
            out.append((vectors[start : start + n] @ q).astype(float))
            start += n
        return out
    from tailorbench.registry import did_you_mean

    raise ConfigError(f"unknown baseline {method!r}{did_you_mean(method, METHODS)}; choose one of {', '.join(METHODS)}")


def run_baseline(
    items: Sequence[RelevanceItem],
    ratings: RatingSet,
    method: str,
    out: Output,
    val_fraction: float = 0.5,
    seed: int = 0,
    encoder: Any = None,
) -> dict[str, Any]:
    """Score, pick the threshold on validation users, write votes for the test users; returns the accounting."""
    gold = human_gold(ratings)
    scores = attribute_scores(items, method, encoder)
    val_users = split_users([it.user_id for it in items], val_fraction, seed)
    v_scores, v_gold, no_gold = [], [], 0
    for it, sc in zip(items, scores):
        if it.user_id not in val_users:
            continue
        for attr, s in zip(it.attributes, sc):
            g = gold.get(item_key(it.index, it.user_id, attr))
            if g is None:
                no_gold += 1
                continue
            v_scores.append(s)
            v_gold.append(g)
    if not v_scores:
        raise ConfigError("no validation attribute has a human label: check that the item file matches the humans")
    threshold, val_f1 = choose_threshold(np.asarray(v_scores), np.asarray(v_gold, dtype=bool))
    test = [(it, sc) for it, sc in zip(items, scores) if it.user_id not in val_users]
    name = method
    write_votes(
        out,
        name,
        [it for it, _ in test],
        (
            [
                {"attribute": a, "relevant": bool(s >= threshold), "raw_answer": f"{s:.6f}"}
                for a, s in zip(it.attributes, sc)
            ]
            for it, sc in test
        ),
    )
    info: dict[str, Any] = {
        "method": method,
        "name": name,
        "threshold": threshold,
        "validation": {"users": sorted(val_users), "n_attributes": len(v_scores), "f1": val_f1,
                       "attributes_without_human_label": no_gold},
        "test": {"users": sorted({it.user_id for it, _ in test}), "n_items": len(test),
                 "n_attributes": sum(len(it.attributes) for it, _ in test)},
        "out": str(out.path()),
        "seed": seed,
    }
    if encoder is not None and hasattr(encoder, "describe"):
        info["encoder"] = encoder.describe()
    return info
