"""Intervention for stage 1: a lightweight verifier trained on the human labels of extracted attributes, and the
verify-and-refine loop that uses it.

Features (frozen encoder, default the shipped MiniLM): the attribute's embedding, its elementwise product with
the user turn most similar to it, and the max / mean cosine similarity to the user's turns (an attribute that no
turn supports scores low). Target: the human majority says *accepted* (uncertain and rejected are problematic;
ties have no majority and are left out, counted). A logistic head (`stages/statistics.py`) is trained on the
attributes of one seeded part of the users and judged on the rest, so the reported gain is on people it never saw.

What the evaluation says: acceptance (share the human majority accepts) of every extracted attribute vs of the
attributes the verifier keeps, on held-out users — the question "would people accept more of what we keep?" —
plus the verifier's own F1 and Cohen's kappa against the human majority. The refine step asks the extractor to
restate rejected attributes; those new texts have no human label yet: export them (`tailor stages export-tasks`)
for a new round of annotation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.agreement.ratings import RatingSet
from tailorbench.bootstrap import Resampler, percentile_ci
from tailorbench.errors import ConfigError
from tailorbench.files import Output
from tailorbench.models.base import GenParams
from tailorbench.prompts import compile_template, split_messages
from tailorbench.threestage.extraction.analysis import majority_labels
from tailorbench.threestage.extraction.extract import parse_attributes, user_turns
from tailorbench.threestage.llm import ask
from tailorbench.threestage.recentering_formats import Stage1Item, item_key
from tailorbench.threestage.statistics import HeadFit, LogisticHead, compare_to_majority, fit_logistic, heldout_users

REFINE_TEMPLATE = Path(__file__).with_name("templates") / "refine.jinja"
FEATURES = "verifier-v1: attribute, attribute * best turn, max/mean cosine to user turns, has turns"
HEAD_FILE = "verifier.npz"
HELDOUT_FILE = "verifier_heldout.jsonl"


def _features(attrs: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """(n, 2d + 3) features of n attribute vectors against one user's turn vectors (possibly none)."""
    n, d = attrs.shape
    if turns.shape[0] == 0:
        return np.hstack([attrs, np.zeros((n, d)), np.zeros((n, 3))])
    sims = attrs @ turns.T
    best = turns[sims.argmax(axis=1)]
    return np.hstack([attrs, attrs * best, sims.max(axis=1, keepdims=True), sims.mean(axis=1, keepdims=True),
                      np.ones((n, 1))])


class Featurizer:
    """Encodes each user's turns once, then any attribute text against them (the refine loop reuses it)."""

    def __init__(self, encoder: Any, items: Sequence[Stage1Item]) -> None:
        self.encoder = encoder
        turns = {it.index: user_turns(it.conversations) for it in items}
        flat = [t for ts in turns.values() for t in ts]
        vecs = encoder.encode(flat)[0] if flat else np.zeros((0, 1))
        self.turns: dict[int, np.ndarray] = {}
        start = 0
        for index, ts in turns.items():
            self.turns[index] = vecs[start:start + len(ts)]
            start += len(ts)

    def __call__(self, pairs: Sequence[tuple[int, str]]) -> np.ndarray:
        """Features of (item index, attribute text) pairs, all attribute texts encoded in one batch."""
        vecs = self.encoder.encode([a for _, a in pairs])[0]
        out = np.zeros((len(pairs), 2 * vecs.shape[1] + 3))
        for index in {i for i, _ in pairs}:
            rows = [j for j, (i, _) in enumerate(pairs) if i == index]
            turns = self.turns[index]
            if turns.shape[0] == 0:
                turns = np.zeros((0, vecs.shape[1]))
            out[rows] = _features(vecs[rows], turns)
        return out


def train_verifier(
    items: dict[int, Stage1Item],
    ratings: RatingSet,
    encoder: Any,
    out: Output,
    fit: HeadFit = HeadFit(),
) -> dict[str, Any]:
    """Train on the training users' human-majority labels, judge on the held-out users; writes the head
    (`verifier.npz`) and held-out predictions in the folder output `out` and returns the report object (stage
    `verifier`)."""
    test_fraction, seed, l2, threshold = fit.test_fraction, fit.seed, fit.l2, fit.threshold
    n_resamples, level = fit.n_resamples, fit.level
    majority = majority_labels(ratings)
    rows: list[tuple[Stage1Item, str, str | None]] = []
    for it in items.values():
        for a in it.attributes:
            key = item_key(it.index, it.user_id, a)
            if key in majority:
                rows.append((it, a, majority[key]))
    ties = sum(1 for _, _, lab in rows if lab is None)
    rows = [r for r in rows if r[2] is not None]
    if not rows:
        raise ConfigError("no attribute has a human majority label: check the item file against the task-1 files")
    held = heldout_users([it.user_id for it, _, _ in rows], test_fraction, seed)
    feats = Featurizer(encoder, list(items.values()))
    x = feats([(it.index, a) for it, a, _ in rows])
    y = np.array([lab == "accepted" for _, _, lab in rows])
    test = np.array([it.user_id in held for it, _, _ in rows])
    meta = {"kind": "verifier", "features": FEATURES, "encoder": _describe(encoder), "target": "human majority "
            "accepted (1) vs uncertain/rejected (0)", "seed": seed, "test_fraction": test_fraction,
            "heldout_users": sorted(held), "train_users": sorted({it.user_id for it, _, _ in rows} - held)}
    head = fit_logistic(x[~test], y[~test], l2=l2, threshold=threshold, meta=meta)
    head.save(out, HEAD_FILE)
    p = head.proba(x[test])
    keep = p >= threshold
    test_rows = [r for r, t in zip(rows, test) if t]
    out.write_jsonl(HELDOUT_FILE, ({"index": it.index, "user_id": it.user_id, "attribute": a,
                                    "p_accepted": float(pi), "kept": bool(k), "human_majority": lab}
                                   for (it, a, lab), pi, k in zip(test_rows, p, keep)))
    keys = [item_key(it.index, it.user_id, a) for it, a, _ in test_rows]
    accepted = y[test]
    report: dict[str, Any] = {
        "head": str(out.path(HEAD_FILE)),
        "split": {"heldout_users": meta["heldout_users"], "train_users": meta["train_users"], "seed": seed,
                  "n_train": int((~test).sum()), "n_heldout": int(test.sum()),
                  "ties_left_out": ties},
        "fit": head.meta["fit"],
        "threshold": threshold,
        "acceptance": acceptance_before_after(accepted, keep, [lab for _, _, lab in test_rows], n_resamples, seed,
                                              level),
        "vs_human_majority": compare_to_majority(
            dict(zip(keys, accepted.tolist())),
            {"verifier": dict(zip(keys, keep.tolist())), "keep everything": dict.fromkeys(keys, True)},
            reference="verifier", n_resamples=n_resamples, seed=seed, level=level),
        "encoder": meta["encoder"],
        "notes": [],
    }
    if ties:
        report["notes"].append(f"{ties} attribute(s) without a human majority (tie) were left out of training and "
                               "evaluation")
    if test.sum() == 0 or (~test).sum() == 0:
        report["notes"].append("one side of the user split has no labelled attribute")
    return report


def acceptance_before_after(accepted: np.ndarray, keep: np.ndarray, labels: Sequence[str | None],
                            n_resamples: int, seed: int, level: float) -> dict[str, Any]:
    """Acceptance of all attributes (before) vs of the kept ones (after), the gain, the share kept and the
    share of accepted attributes kept, with one paired bootstrap over attributes."""
    a, k = accepted.astype(float), keep.astype(float)
    block = np.column_stack([np.ones_like(a), a, k, k * a])
    n = len(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        def stats(t: np.ndarray) -> np.ndarray:
            before, after = t[..., 1] / t[..., 0], t[..., 3] / t[..., 2]
            return np.stack([before, after, after - before, t[..., 2] / t[..., 0], t[..., 3] / t[..., 1]], axis=-1)

        point = stats(block.sum(axis=0))
        boots = stats(Resampler(n, n_resamples, seed).totals([block])[0]) if n else np.full((1, 5), np.nan)
    cis = percentile_ci(boots, level)
    out: dict[str, Any] = {"n": n}
    for i, name in enumerate(("before", "after", "gain", "share_kept", "accepted_kept")):
        out[name] = float(point[i]) if np.isfinite(point[i]) else None
        out[f"{name}_ci"] = cis[i].as_list()
    kept_by = Counter(lab for lab, kk in zip(labels, keep) if kk)
    all_by = Counter(labels)
    out["kept_share_by_majority"] = {lab: kept_by.get(lab, 0) / c for lab, c in sorted(all_by.items(), key=str)
                                     if lab is not None}
    return out


def _describe(encoder: Any) -> dict[str, Any]:
    return encoder.describe() if hasattr(encoder, "describe") else {"encoder": type(encoder).__name__}


def _first_verdicts(it: Stage1Item, head: LogisticHead, feats: Featurizer, counts: Counter[str]) -> dict[str, Any]:
    """Round 0: each extracted attribute of an item scored, kept at or over the threshold; the item's state."""
    log: list[dict[str, Any]] = []
    kept: list[str] = []
    rejected: list[str] = []
    if it.attributes:
        p = head.proba(feats([(it.index, a) for a in it.attributes]))
        for a, pi in zip(it.attributes, p):
            ok = bool(pi >= head.threshold)
            log.append({"attribute": a, "p_accepted": float(pi), "kept": ok, "round": 0, "origin": "extracted"})
            (kept if ok else rejected).append(a)
    counts["extracted"] += len(it.attributes)
    counts["kept_extracted"] += len(kept)
    return {"kept": kept, "rejected": rejected, "log": log, "seen": set(it.attributes)}


def _verify_restated(it: Stage1Item, answer: list[Any], r: int, st: dict[str, Any], evidence: dict[str, Any],
                     head: LogisticHead, feats: Featurizer, counts: Counter[str]) -> None:
    """Round `r`: the extractor's restatements of an item's rejected attributes (those not seen before), each
    scored and kept or rejected again."""
    st["rejected"] = []
    new = [(t, ev) for t, ev in answer if t not in st["seen"]]
    st["seen"].update(t for t, _ in new)
    counts["restated"] += len(new)
    if not new:
        return
    p = head.proba(feats([(it.index, t) for t, _ in new]))
    for (t, ev), pi in zip(new, p):
        ok = bool(pi >= head.threshold)
        st["log"].append({"attribute": t, "p_accepted": float(pi), "kept": ok, "round": r, "origin": "restated"})
        evidence[t] = ev
        if ok:
            st["kept"].append(t)
            counts["kept_restated"] += 1
        else:
            st["rejected"].append(t)


def verify_and_refine(
    items: dict[int, Stage1Item],
    head: LogisticHead,
    encoder: Any,
    out: Output,
    model: str | None = None,
    rounds: int = 1,
    name: str | None = None,
    template: str | Path | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every attribute; drop those under the threshold, or (with `model`) ask the extractor to restate
    them up to `rounds` times, verifying each restatement. Writes a stage-1 item file (the file output `out`;
    extractor `NAME+verified`, a `verification` list per item) ready for `tailor stages export-tasks`."""
    if head.meta.get("kind") != "verifier":
        raise ConfigError("this head is not a verifier (train one with `tailor stages train-verifier`)")
    if rounds < 0:
        raise ConfigError("--rounds must be >= 0")
    feats = Featurizer(encoder, list(items.values()))
    counts: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    state = {it.index: _first_verdicts(it, head, feats, counts) for it in items.values()}
    evidence = {it.index: dict(zip(it.attributes, it.evidence or [])) for it in items.values()}
    if model is not None and rounds:
        tmpl, _ = compile_template(Path(template) if template else REFINE_TEMPLATE, "refine template")
        for r in range(1, rounds + 1):
            asks = [it for it in items.values() if state[it.index]["rejected"]]
            if not asks:
                break
            prompts = [split_messages(tmpl.render(turns=user_turns(it.conversations),
                                                  rejected=state[it.index]["rejected"])) for it in asks]
            counts["reasked"] += sum(len(state[it.index]["rejected"]) for it in asks)
            batch = ask(model, prompts, parse_attributes, GenParams(temperature=0.0, max_tokens=512), options)
            calls.update(batch.counts)
            for it, ans in zip(asks, batch.answers):
                _verify_restated(it, ans.value or [], r, state[it.index], evidence[it.index], head, feats, counts)
    out.write_jsonl(None, ({"index": it.index, "user_id": it.user_id, "attributes": state[it.index]["kept"],
                            "evidence": [evidence[it.index].get(a, []) for a in state[it.index]["kept"]],
                            "conversations": it.conversations, "extractor": f"{name or it.extractor}+verified",
                            "source": it.source, "verification": state[it.index]["log"]} for it in items.values()))
    counts["final"] = sum(len(s["kept"]) for s in state.values())
    counts["dropped"] = sum(1 for s in state.values() for e in s["log"] if not e["kept"])
    return {"out": str(out.path()), "threshold": head.threshold, "rounds": rounds if model else 0,
            **_tallies(counts, calls)}


def _tallies(counts: Counter[str], calls: Counter[str]) -> dict[str, Any]:
    """The counts of attributes and refine calls `verify_and_refine` returns, and its note."""
    return {"counts": {k: counts.get(k, 0) for k in ("extracted", "kept_extracted", "reasked", "restated",
                                                     "kept_restated", "dropped", "final")},
            "refine_calls": {k: calls.get(k, 0) for k in ("ok", "invalid", "failed")},
            "notes": ["restated attributes have no human label yet: export them with `tailor stages export-tasks`"]
            if counts.get("restated") else []}
