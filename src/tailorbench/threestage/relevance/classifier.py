"""Intervention for stage 2: a relevance classifier trained on the human labels of (prompt, attribute) pairs.

Features (frozen encoder, default the shipped MiniLM): the cosine of prompt and attribute and their elementwise
product (which dimensions agree, not only how much), into the logistic head of `stages/statistics.py`. Target:
the strict human majority (a tie is not relevant — the same gold as the stage-2 report). Trained on one seeded
part of the users, judged on the others against the human majority: F1 (relevant = positive) and Cohen's kappa,
next to "before" raters on the same held-out items — the plain embedding cosine with its threshold picked on the
training users, and any LLM judge or baseline vote files given — with the paired gain and its CI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tailorbench.agreement.ratings import RatingSet
from tailorbench.errors import ConfigError
from tailorbench.files import Output
from tailorbench.threestage.recentering_formats import HUMAN, RelevanceItem, item_key, write_votes
from tailorbench.threestage.relevance.analysis import human_gold
from tailorbench.threestage.statistics import (
    HeadFit,
    LogisticHead,
    choose_threshold,
    compare_to_majority,
    fit_logistic,
    heldout_users,
)

FEATURES = "relevance-v1: cosine(prompt, attribute), prompt * attribute"
HEAD_FILE = "relevance_classifier.npz"
VOTES_FILE = "relevance_classifier_votes.jsonl"
NAME = "relevance-classifier"
COSINE = "embedding cosine (threshold on training users)"


def features(encoder: Any, items: Sequence[RelevanceItem]) -> tuple[list[str], np.ndarray]:
    """(item keys, (rows, d + 1) features) for every attribute of every item, in item order."""
    prompts = encoder.encode([it.prompt for it in items])[0] if items else np.zeros((0, 1))
    flat = [a for it in items for a in it.attributes]
    attrs = encoder.encode(flat)[0] if flat else np.zeros((0, prompts.shape[1]))
    owner = np.repeat(np.arange(len(items)), [len(it.attributes) for it in items])
    p = prompts[owner] if len(flat) else np.zeros((0, prompts.shape[1]))
    keys = [item_key(it.index, it.user_id, a) for it in items for a in it.attributes]
    return keys, np.hstack([(p * attrs).sum(axis=1, keepdims=True), p * attrs])


def train_relevance_classifier(
    items: Sequence[RelevanceItem],
    ratings: RatingSet,
    encoder: Any,
    out: Output,
    fit: HeadFit = HeadFit(),
) -> dict[str, Any]:
    """Train on the training users, write the head and the held-out users' votes (Re-Centering model shape) in
    the folder output `out`, and compare everyone on the held-out items; returns the report object (stage
    `relevance_classifier`). Model ratings in `ratings` (LLM judges, baselines) are the "before" raters."""
    test_fraction, seed, l2, threshold = fit.test_fraction, fit.seed, fit.l2, fit.threshold
    n_resamples, level = fit.n_resamples, fit.level
    gold = human_gold(ratings)
    if not gold:
        raise ConfigError("no stage-2 human label: give --human or --export")
    keys, x = features(encoder, items)
    owner = [it for it in items for _ in it.attributes]
    labelled = np.array([k in gold for k in keys], dtype=bool)
    if not labelled.any():
        raise ConfigError("no attribute of the item file has a human label: check it against the human files")
    held = heldout_users([it.user_id for it, lab in zip(owner, labelled) if lab], test_fraction, seed)
    test_user = np.array([it.user_id in held for it in owner], dtype=bool)
    y = np.array([gold.get(k, False) for k in keys], dtype=bool)
    train = labelled & ~test_user
    meta = {"kind": "relevance_classifier", "features": FEATURES, "encoder": _describe(encoder),
            "target": "strict human majority relevant (tie = not relevant)", "seed": seed,
            "test_fraction": test_fraction, "heldout_users": sorted(held),
            "train_users": sorted({it.user_id for it, t in zip(owner, train) if t})}
    head = fit_logistic(x[train], y[train], l2=l2, threshold=threshold, meta=meta)
    head.save(out, HEAD_FILE)
    p = head.proba(x[test_user]) if test_user.any() else np.zeros(0)
    test_items = [it for it in items if it.user_id in held]
    write_votes(out, NAME, test_items, _entries(test_items, iter(p), threshold), VOTES_FILE)
    cos_t, cos_f1 = choose_threshold(x[train, 0], y[train])
    test_keys = [k for k, t in zip(keys, test_user) if t]
    test_gold = {k: gold[k] for k in test_keys if k in gold}
    raters: dict[str, dict[str, bool]] = {
        NAME: dict(zip(test_keys, (p >= threshold).tolist())),
        COSINE: dict(zip(test_keys, (x[test_user, 0] >= cos_t).tolist())),
    }
    humans: dict[str, dict[str, bool]] = {}
    test_set = set(test_keys)
    for r in ratings.ratings:
        if r.item in test_set:
            (humans if r.group == HUMAN else raters).setdefault(r.rater, {})[r.item] = bool(r.label)
    report: dict[str, Any] = {
        "head": str(out.path(HEAD_FILE)),
        "votes": str(out.path(VOTES_FILE)),
        "split": {"heldout_users": meta["heldout_users"], "train_users": meta["train_users"], "seed": seed,
                  "n_train": int(train.sum()), "n_heldout": len(test_gold),
                  "attributes_without_human_label": int((~labelled).sum())},
        "fit": head.meta["fit"],
        "threshold": threshold,
        "cosine_threshold": {"value": cos_t, "train_f1": cos_f1},
        "heldout": compare_to_majority(test_gold, raters, humans, reference=NAME, n_resamples=n_resamples,
                                       seed=seed, level=level),
        "encoder": meta["encoder"],
        "notes": [],
    }
    missing_models = sorted(r for r in raters if r not in (NAME, COSINE) and not set(raters[r]) & set(test_gold))
    if missing_models:
        report["notes"].append(f"no held-out vote from {', '.join(missing_models)} (e.g. a baseline scored only "
                               "other users): compare on a split they cover")
    return report


def _entries(items: Sequence[RelevanceItem], probs: Any, threshold: float) -> list[list[dict[str, Any]]]:
    out = []
    for it in items:
        row = []
        for a in it.attributes:
            pi = float(next(probs))
            row.append({"attribute": a, "relevant": pi >= threshold, "raw_answer": f"{pi:.6f}"})
        out.append(row)
    return out


def classify(items: Sequence[RelevanceItem], head: LogisticHead, encoder: Any, out: Output,
             name: str = NAME) -> dict[str, Any]:
    """Votes of a trained classifier for every attribute of every item (Re-Centering model shape), as the file
    output `out`."""
    if head.meta.get("kind") != "relevance_classifier":
        raise ConfigError("this head is not a relevance classifier (train one with `tailor stages train-relevance`)")
    _, x = features(encoder, items)
    p = head.proba(x) if len(x) else np.zeros(0)
    write_votes(out, name, items, _entries(items, iter(p), head.threshold))
    return {"out": str(out.path()), "name": name, "items": len(items), "attributes": len(p),
            "share_relevant": float((p >= head.threshold).mean()) if len(p) else None,
            "threshold": head.threshold}


def _describe(encoder: Any) -> dict[str, Any]:
    return encoder.describe() if hasattr(encoder, "describe") else {"encoder": type(encoder).__name__}
