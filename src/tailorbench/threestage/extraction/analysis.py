"""Stage 1 (extraction) analysis: an extractor model turned a user's conversations into attributes with evidence
turns; humans labelled each attribute accepted / uncertain / rejected; rejected attributes got an error category.

Reported per extractor and per source (e.g. real vs synthetic conversations): the share of attributes the human
majority accepts, finds uncertain or rejects (ties have no majority and are counted), inter-annotator agreement
(from agreement/, ordinal rejected < uncertain < accepted), and the error taxonomy of rejected attributes as each
categoriser (a human or an LLM) assigned it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.agreement import stats as st
from tailorbench.agreement.matrix import build_matrix
from tailorbench.agreement.ratings import RatingSet
from tailorbench.agreement.report import AgreeOptions, agreement_report
from tailorbench.errors import DataError
from tailorbench.threestage.recentering_formats import (
    HUMAN,
    JUDGMENT_ORDER,
    Alignment,
    Stage1Item,
    get_int,
    get_str,
    item_key,
    jsonl,
)

CATEGORIES = ("overgeneralization", "task-context confusion", "unsupported", "other")


def read_taxonomy(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Error categories `{"index", "user_id", "attribute", "category", "rater"}` (humans' or an LLM's)."""
    out = []
    for path in paths:
        for line, rec in jsonl(path):
            cat = rec.get("category")
            if cat is not None and cat not in CATEGORIES:
                raise DataError(path, line, "category", f"must be one of {', '.join(CATEGORIES)} or null, got {cat!r}")
            out.append({"item": item_key(get_int(rec, "index", path, line), get_str(rec, "user_id", path, line),
                                         get_str(rec, "attribute", path, line, text=True)),
                        "category": cat, "rater": get_str(rec, "rater", path, line),
                        "status": rec.get("status", "ok")})
    return out


def majority_labels(ratings: RatingSet) -> dict[str, str | None]:
    """Human majority per attribute (agreement's tie policy: a tie has no majority -> None)."""
    humans = RatingSet([r for r in ratings.ratings if r.group == HUMAN], ratings.sources)
    if not humans.ratings:
        return {}
    m = build_matrix(humans, JUDGMENT_ORDER)
    maj = st.majority(st.category_counts(m.codes, m.k))
    return {item: (str(m.categories[g]) if g >= 0 else None) for item, g in zip(m.items, maj)}


def _rates(labels: list[str | None]) -> dict[str, Any]:
    n = len(labels)
    c = Counter(labels)
    out: dict[str, Any] = {"n": n, "no_majority": c.get(None, 0)}
    for lab in ("accepted", "uncertain", "rejected"):
        out[lab] = c.get(lab, 0) / n if n else None
    out["problematic"] = (c.get("uncertain", 0) + c.get("rejected", 0)) / n if n else None
    return out


def _taxonomy(taxonomy: Sequence[dict[str, Any]], majority: dict[str, str | None],
              meta: dict[str, Stage1Item]) -> dict[str, Any]:
    """Per rater of the taxonomy: category counts and shares, invalid answers, attributes the human majority did
    not reject, and counts by source."""
    tax: dict[str, Any] = {}
    for t in taxonomy:
        entry = tax.setdefault(t["rater"], {"counts": Counter(), "invalid": 0, "not_rejected": 0, "by_source": {}})
        if majority.get(t["item"]) != "rejected":
            entry["not_rejected"] += 1
        if t["category"] is None:
            entry["invalid"] += 1
            continue
        entry["counts"][t["category"]] += 1
        src = meta[t["item"]].source if t["item"] in meta else "unknown"
        entry["by_source"].setdefault(src, Counter())[t["category"]] += 1
    for entry in tax.values():
        total = sum(entry["counts"].values())
        entry["shares"] = {c: entry["counts"].get(c, 0) / total if total else None for c in CATEGORIES}
        entry["counts"] = {c: entry["counts"].get(c, 0) for c in CATEGORIES}
        entry["by_source"] = {s: dict(v) for s, v in entry["by_source"].items()}
    return tax


def extraction_report(
    items: dict[int, Stage1Item],
    ratings: RatingSet,
    alignment: Alignment | None = None,
    taxonomy: Sequence[dict[str, Any]] = (),
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The stage-1 JSON object (see docs/stages.md)."""
    majority = majority_labels(ratings)
    meta = {item_key(it.index, it.user_id, a): it for it in items.values() for a in it.attributes}
    by: dict[str, dict[str, list[str | None]]] = {"extractor": defaultdict(list), "source": defaultdict(list)}
    per_rating: dict[str, Counter[str]] = defaultdict(Counter)
    for key, it in meta.items():
        if key not in majority:
            continue
        by["extractor"][it.extractor].append(majority[key])
        by["source"][it.source].append(majority[key])
    for r in ratings.ratings:
        if r.item in meta:
            per_rating[meta[r.item].source][str(r.label)] += 1
    unrated = sum(1 for k in meta if k not in majority)
    agree = agreement_report(ratings, JUDGMENT_ORDER, AgreeOptions(n_resamples=n_resamples, seed=seed))
    tax = _taxonomy(taxonomy, majority, meta)
    by_source = {s: _rates(v) for s, v in sorted(by["source"].items())}
    notes = []
    if unrated:
        notes.append(f"{unrated} attribute(s) of the item file have no human judgment")
    real, syn = by_source.get("real", {}).get("problematic"), by_source.get("synthetic", {}).get("problematic")
    return {
        "n_items": len(items),
        "n_attributes": len(meta),
        "n_attributes_judged": len(majority),
        "by_extractor": {e: _rates(v) for e, v in sorted(by["extractor"].items())},
        "by_source": by_source,
        "real_vs_synthetic_problematic_relative": (real / syn - 1.0) if real is not None and syn else None,
        "per_rating_by_source": {s: dict(c) for s, c in sorted(per_rating.items())},
        "agreement": {
            "n_raters": agree["n_raters"],
            "percent_agreement": agree["percent_agreement"],
            "fleiss_kappa": {k: agree["fleiss_kappa"][k] for k in ("value", "ci") if k in agree["fleiss_kappa"]},
            "krippendorff_alpha_ordinal": agree["krippendorff_alpha"].get("ordinal"),
            "human_human_cohen_kappa": agree["cohen_kappa_by_pair_type"].get("human-human", {}).get("kappa"),
            "n_ties": agree["majority"]["n_ties"],
        },
        "taxonomy": tax,
        "missing_ratings": dict(sorted(ratings.missing.items())),
        "alignment": alignment.as_dict() if alignment is not None else None,
        "notes": notes,
    }
