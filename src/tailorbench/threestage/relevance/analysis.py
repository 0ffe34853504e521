"""Stage 2 (relevance) analysis: the table the Re-Centering paper reports, for any humans and judges.

Per rater: items rated and the share marked relevant; per rater pair sharing at least `min_shared` items:
Cohen's kappa; per pair type (human-human, human-model, model-model): the plain mean of its pairs' kappas; per
rater: precision / recall / F1 with "relevant" as the positive class against the strict majority of the humans
(a tie is not relevant), each human against the other humans. All statistics come from `agreement/` and share one
seeded bootstrap over items.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from tailorbench.agreement import stats as st
from tailorbench.agreement.admissibility import AdmissibilityOptions, admissibility, margin
from tailorbench.agreement.matrix import MISSING, RatingMatrix, build_matrix
from tailorbench.agreement.ratings import RatingSet
from tailorbench.bootstrap import Resampler, percentile_ci
from tailorbench.errors import ConfigError
from tailorbench.threestage.recentering_formats import HUMAN, Alignment

#: category order: code 0 = not relevant, code 1 = relevant
ORDER = ["False", "True"]
POS = 1
DEFAULT_MIN_SHARED = 20


def _num(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _kind(a: str, b: str) -> str:
    return "-".join(sorted((a, b)))


def _raters(m: RatingMatrix, alignment: Alignment | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r, name in enumerate(m.raters):
        col = m.codes[:, r]
        rated = col != MISSING
        n = int(rated.sum())
        entry: dict[str, Any] = {
            "group": m.groups[r],
            "n": n,
            "share_relevant": _num((col[rated] == POS).mean()) if n else None,
        }
        used = set(col[rated].tolist())
        if len(used) == 1:
            entry["constant_label"] = ORDER[used.pop()] == "True"
        if alignment is not None and alignment.model_votes_without_human.get(name):
            entry["n_without_human"] = alignment.model_votes_without_human[name]
        out[name] = entry
    return out


def _pair_reason(a: np.ndarray, b: np.ndarray) -> str:
    both = (a >= 0) & (b >= 0)
    la, lb = set(a[both].tolist()), set(b[both].tolist())
    if len(la) == 1 and la == lb:
        return "undefined: both raters gave the same single label on every shared item (chance agreement is 1)"
    return "undefined on these items"


def human_gold(ratings: RatingSet) -> dict[str, bool]:
    """Strict majority of the humans per rating item (a tie is not relevant), via agreement."""
    humans = RatingSet([r for r in ratings.ratings if r.group == "human"], ratings.sources)
    if not humans.ratings:
        return {}
    m = build_matrix(humans, ORDER)
    gold = st.strict_majority(st.category_counts(m.codes, 2), POS)
    return {item: bool(g == POS) for item, g in zip(m.items, gold) if g >= 0}


def relevance_report(
    ratings: RatingSet,
    alignment: Alignment | None = None,
    min_shared: int = DEFAULT_MIN_SHARED,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    epsilon: float | None = None,
    min_items: int = 30,
    annotators: str | None = None,
) -> dict[str, Any]:
    """The stage-2 JSON object (see docs/stages.md for every key); `epsilon` (or the margin the authors advise for
    `annotators`: expert 0.2, skilled 0.15, crowd 0.1; 0.2 when neither) and `min_items` are the
    alternative-annotator test's (docs/metrics.md, "Human admissibility")."""
    eps, who = margin(epsilon, annotators)
    adm_opts = AdmissibilityOptions(epsilon=eps, annotators=who, min_items=min_items, alignment="accuracy",
                                    n_resamples=n_resamples, seed=seed, level=level, strict_positive=POS)
    adm_opts.check()
    if min_shared < 1:
        raise ConfigError("--min-shared must be at least 1")
    if n_resamples < 1 or not 0 < level < 1:
        raise ConfigError("--resamples must be >= 1 and --level between 0 and 1")
    m = build_matrix(ratings, ORDER)
    resampler = Resampler(len(m.items), n_resamples, seed)
    notes: list[str] = []
    kappas = _pairwise_kappa(m, resampler, min_shared, level)
    group_kappa, group_detail = _group_kappa(kappas, level, min_shared)
    majority = _vs_human_majority(m, resampler, level)
    if not majority.humans:
        notes.append("no human ratings: F1 against the human majority is undefined for every rater")
    rated_by_humans = majority.human_counts.sum(axis=1) > 0
    n_ties = int(((majority.human_counts[:, POS] * 2 == majority.human_counts.sum(axis=1)) & rated_by_humans).sum())
    notes += _matrix_notes(m, kappas.below, min_shared)
    gold_all = majority.gold_all
    report: dict[str, Any] = {
        "sources": ratings.sources,
        "n_items": len(m.items),
        "n_items_rated_by_humans": int(rated_by_humans.sum()),
        "human_majority": {
            "rule": "strict majority of the humans (a tie is not relevant); each human against the other humans",
            "share_relevant": _num((gold_all[rated_by_humans] == POS).mean()) if rated_by_humans.any() else None,
            "n_ties": n_ties,
        },
        "raters": _raters(m, alignment),
        "min_shared": min_shared,
        "pairwise_kappa": kappas.rows,
        "pairs_below_min_shared": kappas.below,
        "group_kappa": group_kappa,
        "group_kappa_detail": group_detail,
        "f1_vs_human_majority": majority.f1,
        "vs_human_majority": majority.vs,
        "missing_ratings": dict(sorted(ratings.missing.items())),
        "alignment": alignment.as_dict() if alignment is not None else None,
        "bootstrap": {"method": "percentile, resampling items", "n_resamples": n_resamples, "seed": seed,
                      "level": level},
        "notes": notes,
    }
    judges = [r for r, g in enumerate(m.groups) if g != HUMAN]
    if judges and majority.humans:
        report["admissibility"] = admissibility(m, judges, majority.humans, adm_opts)
    if alignment is not None:
        notes += _alignment_notes(alignment)
    return report


@dataclass
class _Kappas:
    """Cohen's kappa of every rater pair sharing at least `min_shared` items: the rows, the pairs left out, the
    kept pairs' indices by pair type, their bootstrap (resamples x pairs) and point estimates."""

    rows: list[dict[str, Any]]
    below: list[dict[str, Any]]
    by_kind: dict[str, list[int]]
    boots: np.ndarray
    points: np.ndarray


def _pairwise_kappa(m: RatingMatrix, resampler: Resampler, min_shared: int, level: float) -> _Kappas:
    """Pairwise Cohen's kappa over shared items."""
    k = 2
    pairs = list(combinations(range(len(m.raters)), 2))
    blocks = [st.pair_block(m.codes[:, a], m.codes[:, b], k) for a, b in pairs]
    shared = [int(bl.sum()) for bl in blocks]
    keep = [i for i, n in enumerate(shared) if n >= min_shared]
    below = [
        {"a": m.raters[pairs[i][0]], "b": m.raters[pairs[i][1]], "n": shared[i]}
        for i, n in enumerate(shared)
        if n < min_shared
    ]
    found = _Kappas([], below, {}, np.zeros((resampler.n_resamples, 0)), np.zeros(0))
    if not keep:
        return found
    totals = resampler.totals([blocks[i] for i in keep])
    found.boots = np.stack([st.cohen_from_totals(t, k)[:, 0] for t in totals], axis=1)  # (B, pairs)
    found.points = np.array([st.cohen_from_totals(blocks[i].sum(axis=0), k)[0] for i in keep])
    cis = percentile_ci(found.boots, level)
    for j, i in enumerate(keep):
        a, b = pairs[i]
        row: dict[str, Any] = {
            "a": m.raters[a],
            "b": m.raters[b],
            "type": _kind(m.groups[a], m.groups[b]),
            "n": shared[i],
            "kappa": _num(found.points[j]),
            "ci": cis[j].as_list(),
        }
        if row["kappa"] is None:
            row["note"] = _pair_reason(m.codes[:, a], m.codes[:, b])
        found.rows.append(row)
        found.by_kind.setdefault(row["type"], []).append(j)
    return found


def _group_kappa(kappas: _Kappas, level: float, min_shared: int) -> tuple[dict[str, float | None], dict[str, Any]]:
    """Per pair type (human-human, human-model, model-model): the plain mean of its pairs' kappas, with its CI."""
    group_kappa: dict[str, float | None] = {}
    group_detail: dict[str, Any] = {}
    points, boots = kappas.points, kappas.boots
    for kind in ("human-human", "human-model", "model-model"):
        idx = kappas.by_kind.get(kind, [])
        defined = [j for j in idx if np.isfinite(points[j])]
        detail: dict[str, Any] = {"n_pairs": len(idx), "n_defined": len(defined)}
        if defined:
            group_kappa[kind] = float(np.mean(points[defined]))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resamples are counted below
                mean_boot = np.nanmean(boots[:, defined], axis=1)
            ci = percentile_ci(mean_boot, level)[0]
            detail["ci"] = ci.as_list()
            if ci.n_undefined:
                detail["undefined_resamples"] = ci.n_undefined
        else:
            group_kappa[kind] = None
            detail["note"] = (
                f"no rater pair of this type shares at least {min_shared} items"
                if not idx
                else "every pair of this type has an undefined kappa"
            )
        group_detail[kind] = detail
    return group_kappa, group_detail


@dataclass
class _Majority:
    """Each rater against the strict human majority: the humans' columns, the humans' category counts per item,
    the majority of all humans, and per rater its F1 and its whole entry."""

    humans: list[int]
    human_counts: np.ndarray
    gold_all: np.ndarray
    f1: dict[str, float | None]
    vs: dict[str, Any]


def _vs_human_majority(m: RatingMatrix, resampler: Resampler, level: float) -> _Majority:
    """Precision / recall / F1 against the strict human majority (each human against the other humans)."""
    k = 2
    humans = [r for r, g in enumerate(m.groups) if g == HUMAN]
    onehot = np.stack([st.category_counts(m.codes[:, [r]], k) for r in range(len(m.raters))], axis=1)
    human_counts = onehot[:, humans, :].sum(axis=1) if humans else np.zeros((len(m.items), k))
    gold_all = st.strict_majority(human_counts, POS)
    found = _Majority(humans, human_counts, gold_all, {}, {})
    vs_blocks: list[np.ndarray] = []
    names: list[str] = []
    for r, name in enumerate(m.raters):
        inside = m.groups[r] == HUMAN
        gold = st.strict_majority(human_counts - onehot[:, r, :], POS) if inside else gold_all
        vs_blocks.append(st.vs_majority_block(m.codes[:, r], gold, k))
        names.append(name)
    if not vs_blocks:
        return found
    totals = resampler.totals(vs_blocks)
    for name, r_block, tot, r in zip(names, vs_blocks, totals, range(len(names))):
        entry = _vs_entry(r_block, tot, m.groups[r] == HUMAN, level)
        found.f1[name] = entry["f1"]
        found.vs[name] = entry
    return found


def _vs_entry(r_block: np.ndarray, tot: np.ndarray, leave_self_out: bool, level: float) -> dict[str, Any]:
    """One rater's accuracy, precision, recall and F1 against the majority, each with its CI."""
    k = 2
    point = st.vs_majority_from_totals(r_block.sum(axis=0), k, POS)
    cis = percentile_ci(st.vs_majority_from_totals(tot, k, POS), level)
    n = int(r_block[:, 0].sum())
    entry: dict[str, Any] = {"n": n, "leave_self_out": leave_self_out}
    for j, stat in enumerate(("accuracy", "precision", "recall", "f1")):
        entry[stat] = _num(point[j])
        entry[f"{stat}_ci"] = cis[j].as_list()
    if entry["f1"] is None:
        entry["note"] = (
            "no item shares a rating with the (other) humans"
            if n == 0
            else "undefined: neither the rater nor the human majority marks any shared item relevant"
        )
    return entry


def _matrix_notes(m: RatingMatrix, below: list[dict[str, Any]], min_shared: int) -> list[str]:
    """Notes on the pairs left out of kappa and the raters who gave one label to every item."""
    notes = []
    if below:
        notes.append(f"{len(below)} rater pair(s) share fewer than {min_shared} items and are left out of kappa")
    constant = [name for name, e in _raters(m, None).items() if "constant_label" in e]
    if constant:
        notes.append(
            f"{len(constant)} rater(s) gave one label to every item ({', '.join(constant)}): they are kept; their "
            "kappa is what the formula gives (0 against a rater who varies), null only when both raters are constant"
        )
    return notes


def _alignment_notes(alignment: Alignment) -> list[str]:
    """Notes on model votes without a human rating and attribute texts that differ between raters."""
    notes = []
    n_wo = sum(alignment.model_votes_without_human.values())
    if n_wo:
        notes.append(f"{n_wo} model vote(s) are for items no human rated: counted in share_relevant, not in F1")
    if alignment.attribute_text_mismatch_items:
        notes.append(
            f"{alignment.attribute_text_mismatch_items} item(s) have attribute texts that differ between raters "
            f"({alignment.attribute_text_mismatch_attributes} attribute(s) not shared): each text is its own item"
        )
    return notes
