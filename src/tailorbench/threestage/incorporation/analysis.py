"""Stage 3 (incorporation): personalized vs generic answers rated per attribute by humans and by judges.

Inputs: the annotation service's A/B-rating task file (`id, user_id, prompt, generic, personalized, attributes,
meta.condition`), its long-format export (item `ID::KEY`, label -2..2 = personalized much worse .. much better;
+3 gives the paper's 1..5 scale), judge ratings in the same format (group `model`), and optional reward-model or
other scores `{"item", "rater", "score"}`. Reported: mean rating, the share "no better than generic" (rating <= 0),
judge-minus-human inflation, an explicit-mention detector and the rating uplift mentions get from humans vs each
judge, and the Spearman / Kendall correlation of every judge and scorer with the mean human rating, with seeded
bootstrap CIs over items.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.agreement.ratings import RatingSet, read_ratings
from tailorbench.bootstrap import Resampler, percentile_ci
from tailorbench.errors import DataError
from tailorbench.memory.tokenize import tokenize
from tailorbench.threestage.recentering_formats import ATTR_SEP, get_float_or_none, get_list, get_str, jsonl
from tailorbench.threestage.statistics import correlations

#: words that say who or how, not what: they never make a mention on their own
_FILLER = frozenset({"user", "users", "keeps", "keep", "prefers", "prefer", "likes", "like", "lives", "live", "works",
                     "work", "wants", "want", "person", "someone", "often", "usually", "very", "really", "s"})


@dataclass(frozen=True)
class ABTask:
    id: str
    user_id: str
    prompt: str
    generic: str
    personalized: str
    attributes: dict[str, str]  # key -> text (keys as the annotation service numbers them)
    condition: str


def read_ab_tasks(path: str | Path) -> dict[str, ABTask]:
    """The A/B-rating task JSONL (annotation service import format); attribute keys follow its numbering."""
    out: dict[str, ABTask] = {}
    for line, rec in jsonl(path):
        tid = get_str(rec, "id", path, line)
        attrs: dict[str, str] = {}
        for j, a in enumerate(get_list(rec, "attributes", path, line)):
            if isinstance(a, str):
                attrs[str(j + 1)] = a
            elif isinstance(a, dict) and isinstance(a.get("text"), str):
                attrs[str(a.get("id", a.get("key", j + 1)))] = a["text"]
            else:
                raise DataError(path, line, f"attributes[{j}]", "must be a string or an object with 'text'")
        meta = rec.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        out[tid] = ABTask(tid, str(rec.get("user_id", "")), get_str(rec, "prompt", path, line, text=True),
                          get_str(rec, "generic", path, line, text=True),
                          get_str(rec, "personalized", path, line, text=True), attrs,
                          str(meta.get("condition", "unknown")))
    return out


def read_scores(path: str | Path) -> dict[str, dict[str, float]]:
    """`{"item", "rater", "score"}` lines (reward models, any scorer) -> rater -> item -> score."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line, rec in jsonl(path):
        item, rater = get_str(rec, "item", path, line), get_str(rec, "rater", path, line)
        score = get_float_or_none(rec, "score", path, line)
        if score is None:
            continue
        if item in out[rater]:
            raise DataError(path, line, "item", f"{rater!r} scored {item!r} twice")
        out[rater][item] = score
    return dict(out)


def content_tokens(text: str) -> set[str]:
    return {t for t in tokenize(text) if t not in _FILLER}


def mentions(answer: str, attribute: str, share: float = 0.5) -> bool:
    """Explicit mention: at least `share` of the attribute's content tokens occur in the answer (words of 5+
    letters also match on their first 5 letters, so "vegetarian"/"vegetarians" or "running"/"runner" meet)."""
    want = content_tokens(attribute)
    if not want:
        return False
    have = set(tokenize(answer))
    stems = {t[:5] for t in have if len(t) >= 5}
    hit = sum(1 for t in want if t in have or (len(t) >= 5 and t[:5] in stems))
    return hit / len(want) >= share


def _ci(values: np.ndarray, fn: Any, n_resamples: int, seed: int, level: float) -> list[float | None]:
    boots = np.array([fn(w) for chunk in Resampler(len(values), n_resamples, seed).weights() for w in chunk])
    return percentile_ci(boots[:, None], level)[0].as_list()


def _wmean(values: np.ndarray, w: np.ndarray) -> float:
    s = w.sum()
    return float((values * w).sum() / s) if s > 0 else float("nan")


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def incorporation_report(
    tasks: dict[str, ABTask],
    ratings: RatingSet,
    scores: dict[str, dict[str, float]] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """The stage-3 JSON object (see docs/stages.md)."""
    per_rater, groups, unknown = _ratings_by_rater(tasks, ratings)
    humans = sorted(n for n, g in groups.items() if g == "human")
    judges = sorted(n for n, g in groups.items() if g != "human")
    by_item: dict[str, list[float]] = defaultdict(list)
    for h in humans:
        for item, v in per_rater[h].items():
            by_item[item].append(v)
    items = sorted(by_item)
    human_mean = {it: float(np.mean(v)) for it, v in by_item.items()}
    mention = {f"{tid}{ATTR_SEP}{key}": mentions(t.personalized, text)
               for tid, t in tasks.items() for key, text in t.attributes.items()}
    stats = _Stats(mention, n_resamples, seed, level)
    notes: list[str] = []
    report: dict[str, Any] = {
        "n_tasks": len(tasks),
        "n_items": len(mention),
        "n_items_rated_by_humans": len(items),
        "humans": {
            "raters": humans,
            "per_item_mean": stats.summary(human_mean),
            "per_rating": stats.summary({f"{h}\x1f{k}": v for h in humans for k, v in per_rater[h].items()}),
            "mention_uplift": stats.uplift(human_mean),
        },
        "mention_detector": {
            "rule": "an answer mentions an attribute when >= half of the attribute's content tokens occur in it",
            "share_items_with_mention": float(np.mean(list(mention.values()))) if mention else None,
        },
        "judges": {},
        "correlation_with_humans": {},
        "by_condition": {},
        "ratings_for_unknown_items": dict(unknown),
        "missing_ratings": dict(sorted(ratings.missing.items())),
        "bootstrap": {"method": "percentile, resampling items", "n_resamples": n_resamples, "seed": seed,
                      "level": level},
        "notes": notes,
    }
    for j in judges:
        report["judges"][j], not_h = _judge_entry(stats, per_rater[j], human_mean)
        if not_h:
            notes.append(f"{not_h} rating(s) of {j} are for items no human rated: in its mean, not in inflation")
    scorers: dict[str, dict[str, float]] = {j: per_rater[j] for j in judges}
    for name, sc in (scores or {}).items():
        scorers[name] = sc
    for name, vals in scorers.items():
        report["correlation_with_humans"][name] = _correlation(stats, vals, human_mean, name in per_rater)
    conds: dict[str, dict[str, float]] = defaultdict(dict)
    for k, v in human_mean.items():
        conds[tasks[k.partition(ATTR_SEP)[0]].condition][k] = v
    report["by_condition"] = {c: stats.summary(v) for c, v in sorted(conds.items())}
    if humans and judges:
        report["admissibility"] = _admissibility(ratings, per_rater, n_resamples, seed, level)
    if unknown:
        notes.append(f"{sum(unknown.values())} rating(s) name a task or attribute missing from the task file")
    if not humans:
        notes.append("no human ratings: inflation and correlations with humans are undefined")
    return report


def _ratings_by_rater(tasks: dict[str, ABTask], ratings: RatingSet) -> tuple[
        dict[str, dict[str, float]], dict[str, str], dict[str, int]]:
    """Each rater's ratings of known items ({rater: {item: -2..2}}), each rater's group, and per rater the
    ratings of items the task file does not hold."""
    per_rater: dict[str, dict[str, float]] = defaultdict(dict)
    groups: dict[str, str] = {}
    unknown: dict[str, int] = defaultdict(int)
    for r in ratings.ratings:
        tid, _, key = r.item.partition(ATTR_SEP)
        if tid not in tasks or key not in tasks[tid].attributes:
            unknown[r.rater] += 1
            continue
        if isinstance(r.label, bool) or not isinstance(r.label, int) or not -2 <= r.label <= 2:
            raise DataError(r.source, r.line, "label", f"A/B ratings are integers -2..2, got {r.label!r}")
        per_rater[r.rater][r.item] = float(r.label)
        groups[r.rater] = r.group
    return per_rater, groups, unknown


@dataclass
class _Stats:
    """The report's statistics of a set of ratings ({item: -2..2}), with the bootstrap's settings and each item's
    explicit mention of its attribute."""

    mention: dict[str, bool]
    n_resamples: int
    seed: int
    level: float

    def ci(self, values: np.ndarray, fn: Any) -> list[float | None]:
        return _ci(values, fn, self.n_resamples, self.seed, self.level)

    def summary(self, values: dict[str, float]) -> dict[str, Any]:
        """Mean rating (and on the 1-5 scale) and the share rated no better, with CIs."""
        v = np.array(list(values.values()))
        if not len(v):
            return {"n": 0, "mean_rating": None, "share_no_better": None}
        return {
            "n": len(v),
            "mean_rating": float(v.mean()),
            "mean_rating_1to5": float(v.mean() + 3),
            "mean_rating_ci": self.ci(v, lambda w: _wmean(v, w)),
            "share_no_better": float((v <= 0).mean()),
            "share_no_better_ci": self.ci(v, lambda w: _wmean((v <= 0).astype(float), w)),
        }

    def uplift(self, values: dict[str, float]) -> dict[str, Any]:
        """Mean rating of items whose answer mentions the attribute minus that of the others, with its CI."""
        mention = self.mention
        keys = [k for k in values if k in mention]
        v = np.array([values[k] for k in keys])
        m = np.array([mention[k] for k in keys], dtype=bool)
        out: dict[str, Any] = {"n_mention": int(m.sum()), "n_no_mention": int((~m).sum())}
        if not m.any() or m.all():
            out.update(uplift=None, note="needs items with and without an explicit mention")
            return out
        out["uplift"] = float(v[m].mean() - v[~m].mean())
        out["uplift_ci"] = self.ci(v, lambda w: _wmean(v, w * m) - _wmean(v, w * ~m))
        return out


def _judge_entry(stats: _Stats, vals: dict[str, float], human_mean: dict[str, float]) -> tuple[dict[str, Any], int]:
    """A judge's summary, its inflation over the human mean and its mention uplift; and how many of its ratings
    are for items no human rated."""
    shared = [k for k in vals if k in human_mean]
    diff = np.array([vals[k] - human_mean[k] for k in shared])
    entry = stats.summary(vals)
    entry["inflation"] = _num(diff.mean()) if len(diff) else None
    entry["inflation_n"] = len(diff)
    if len(diff):
        entry["inflation_ci"] = stats.ci(diff, lambda w, d=diff: _wmean(d, w))
    entry["mention_uplift"] = stats.uplift(vals)
    return entry, len(vals) - len(shared)


def _correlation(stats: _Stats, vals: dict[str, float], human_mean: dict[str, float], judge: bool) -> dict[str, Any]:
    """Correlations of a judge's ratings (or a score) with the human mean, on the items both have."""
    shared = [k for k in sorted(vals) if k in human_mean]
    x = np.array([vals[k] for k in shared])
    y = np.array([human_mean[k] for k in shared])
    entry = correlations(x, y, stats.n_resamples, stats.seed, stats.level)
    entry["kind"] = "judge" if judge else "score"
    entry["n_without_human"] = len(vals) - len(shared)
    return entry


def _admissibility(ratings: RatingSet, per_rater: dict[str, dict[str, float]], n_resamples: int, seed: int,
                   level: float) -> dict[str, Any]:
    """Each judge's alt-test (neg-rmse alignment on the -2..2 scale) and kappas beside the humans', on the ratings
    of known items (docs/metrics.md, "Human admissibility")."""
    from tailorbench.agreement.admissibility import AdmissibilityOptions, admissibility, split_raters
    from tailorbench.agreement.matrix import build_matrix

    known = RatingSet([r for r in ratings.ratings if r.item in per_rater.get(r.rater, {})], ratings.sources)
    m = build_matrix(known)
    judges, humans = split_raters(m)
    return admissibility(m, judges, humans, AdmissibilityOptions(alignment="neg-rmse", n_resamples=n_resamples,
                                                                 seed=seed, level=level))


def read_incorporation(
    tasks_path: str | Path, ratings_paths: Sequence[str | Path], score_paths: Sequence[str | Path] = ()
) -> tuple[dict[str, ABTask], RatingSet, dict[str, dict[str, float]]]:
    scores: dict[str, dict[str, float]] = {}
    for p in score_paths:
        for rater, vals in read_scores(p).items():
            if rater in scores:
                raise DataError(p, None, "rater", f"scores of {rater!r} appear in more than one file")
            scores[rater] = vals
    return read_ab_tasks(tasks_path), read_ratings(ratings_paths), scores
