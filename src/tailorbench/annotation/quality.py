"""Quality while a study runs, per annotator: the median time per item, agreement with the other annotators
and agreement with gold, and MACE competence (the admin project page and `tailor annotate progress`).

Time per item is the server's (`tb_labels.server_ms`: from the assignment being served to its label); the
client's `elapsed_ms` is a form field anyone can set, so it is shown beside it (`median_client_seconds`), never
instead of it.

Agreement with the others, on every rating unit (an item, or an item's attribute for the attribute tasks) they
share with at least one other annotator, is against the leave-self-out majority: the label most of the *others*
gave (units where the others tie have no majority and are left out). Two figures: `majority_agreement`, the
share of those units where the annotator gave the majority label, with a 95% bootstrap interval over items
(`bootstrap.bootstrap_ci`, items resampled whole), from one shared unit on, so it works at crowd quotas of a few
items each; and Cohen's kappa of the same pairs, which on a handful of items says nothing, so it is given once
`MIN_SHARED` items are shared (else None, with the count). MACE (mace.py) estimates each annotator's competence
from every label of the study at once, also from items nobody else shares with them. Agreement with gold is the
share of the gold items they labelled whose label matches the gold answer in full (the task type's `gold_score`
is 1).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from sqlalchemy import select

from tailorbench.agreement.stats import cohen_kappa
from tailorbench.annotation import service, tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.mace import fit_mace
from tailorbench.annotation.models import Item, Label, User
from tailorbench.bootstrap import bootstrap_ci

#: items an annotator must share with others before their kappa is shown
MIN_SHARED = 10


def kappa_against(mine: list[Any], theirs: list[Any]) -> float | None:
    """Cohen's kappa (unweighted) of two label sequences over the same units; None when undefined (no units,
    or one category only on both sides)."""
    if not mine:
        return None
    cats = {c: i for i, c in enumerate(sorted(set(mine) | set(theirs), key=repr))}
    value = cohen_kappa(np.array([cats[c] for c in mine]), np.array([cats[c] for c in theirs]), len(cats))
    return None if math.isnan(value) else value


def leave_self_out_majority(labels: dict[str, Any], rater: str) -> Any | None:
    """The label most of the raters other than `rater` gave to one unit; None without a strict majority."""
    counts = Counter(v for r, v in labels.items() if r != rater).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def annotator_quality(db: Database, project: str | int) -> dict[str, dict[str, Any]]:
    """Per annotator name: `labels`, `median_seconds` (the server's timing; None without it) and
    `median_client_seconds` (the page's own figure), `shared_items` (items they share with at least one other
    annotator), `majority_units`, `majority_agreement` and `majority_ci` (agreement with the leave-self-out
    majority; None without a unit), `kappa` (None below MIN_SHARED shared items or undefined),
    `mace_competence` (None with a single annotator), `gold_items` and `gold_agreement` (share matching; None
    without gold labels)."""
    with db.session() as s:
        p = service.find_project(s, project)
        task = tasks.task_type(p.task_type)
        rows = s.execute(
            select(User.name, Item.ext_id, Item.is_gold, Item.gold, Label.value, Label.duration_ms, Label.server_ms)
            .join(Item, Item.id == Label.item_id).join(User, User.id == Label.user_id)
            .where(Label.project_id == p.id).order_by(Label.id)).all()
    durations: dict[str, list[int]] = defaultdict(list)
    served: dict[str, list[int]] = defaultdict(list)
    gold: dict[str, list[bool]] = defaultdict(list)
    units: dict[str, dict[str, Any]] = defaultdict(dict)  # unit -> {rater: label}
    unit_item: dict[str, str] = {}
    raters: list[str] = []
    for name, ext_id, is_gold, gold_value, value, duration, server in rows:
        if name not in raters:
            raters.append(name)
        if duration is not None:
            durations[name].append(duration)
        if server is not None:
            served[name].append(server)
        if is_gold:
            gold[name].append(task.gold_score(gold_value, value) >= 1.0)
            continue
        for unit, label in task.to_ratings(ext_id, value):
            units[unit][name] = label
            unit_item[unit] = ext_id
    n_labels = Counter(r[0] for r in rows)
    competence = mace_competence(units)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(raters):
        mine, theirs, shared, on_items = [], [], set(), []
        for unit, labels in units.items():
            if name not in labels or len(labels) < 2:
                continue
            shared.add(unit_item[unit])
            majority = leave_self_out_majority(labels, name)
            if majority is not None:
                mine.append(labels[name])
                theirs.append(majority)
                on_items.append(unit_item[unit])
        hits = gold.get(name, [])
        out[name] = {
            "labels": n_labels[name],
            "median_seconds": _median_s(served.get(name)),
            "median_client_seconds": _median_s(durations.get(name)),
            "shared_items": len(shared),
            **majority_agreement(mine, theirs, on_items),
            "kappa": kappa_against(mine, theirs) if len(shared) >= MIN_SHARED else None,
            "mace_competence": competence.get(name),
            "gold_items": len(hits),
            "gold_agreement": sum(hits) / len(hits) if hits else None,
        }
    return out


def _median_s(times: list[int] | None) -> float | None:
    return round(statistics.median(times) / 1000, 1) if times else None


def majority_agreement(mine: list[Any], theirs: list[Any], items: list[str], seed: int = 0) -> dict[str, Any]:
    """`majority_units`, `majority_agreement` (share of units where `mine` equals the others' majority) and
    `majority_ci` (95% bootstrap interval, whole items resampled: an attribute task's units of one item go
    together); None figures without a unit."""
    if not mine:
        return {"majority_units": 0, "majority_agreement": None, "majority_ci": None}
    hits = np.array([a == b for a, b in zip(mine, theirs, strict=True)], dtype=float)
    lo, hi = bootstrap_ci(hits, groups=np.array(items), seed=seed)
    return {"majority_units": len(mine), "majority_agreement": float(hits.mean()), "majority_ci": [lo, hi]}


def mace_competence(units: dict[str, dict[str, Any]]) -> dict[str, float]:
    """MACE competence per annotator over every rating unit (empty with fewer than two annotators: with one
    there is nothing to tell their errors from the truth)."""
    triples = [(unit, rater, label) for unit, labels in units.items() for rater, label in labels.items()]
    if len({rater for _, rater, _ in triples}) < 2:
        return {}
    return {str(rater): round(theta, 3) for rater, theta in fit_mace(triples).competence.items()}
