"""Quality while a study runs, per annotator: the median time per item, agreement with the other annotators
and agreement with gold (the admin project page and `tailor annotate progress`).

Agreement with the others is Cohen's kappa of the annotator's labels against the leave-self-out majority: on
every rating unit (an item, or an item's attribute for the attribute tasks) they share with at least one other
annotator, the label most of the *others* gave (units where the others tie have no majority and are left out).
Kappa on a handful of items says nothing, so it is given once `MIN_SHARED` items are shared (else None, with the
count). Agreement with gold is the share of the gold items they labelled whose label matches the gold answer
in full (the task type's `gold_score` is 1).
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
from tailorbench.annotation.models import Item, Label, User

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
    """Per annotator name: `labels`, `median_seconds` (None without durations), `shared_items` (items they
    share with at least one other annotator), `kappa` (None below MIN_SHARED shared items or undefined),
    `gold_items` and `gold_agreement` (share matching; None without gold labels)."""
    with db.session() as s:
        p = service.find_project(s, project)
        task = tasks.task_type(p.task_type)
        rows = s.execute(
            select(User.name, Item.ext_id, Item.is_gold, Item.gold, Label.value, Label.duration_ms)
            .join(Item, Item.id == Label.item_id).join(User, User.id == Label.user_id)
            .where(Label.project_id == p.id).order_by(Label.id)).all()
    durations: dict[str, list[int]] = defaultdict(list)
    gold: dict[str, list[bool]] = defaultdict(list)
    units: dict[str, dict[str, Any]] = defaultdict(dict)  # unit -> {rater: label}
    unit_item: dict[str, str] = {}
    raters: list[str] = []
    for name, ext_id, is_gold, gold_value, value, duration in rows:
        if name not in raters:
            raters.append(name)
        if duration is not None:
            durations[name].append(duration)
        if is_gold:
            gold[name].append(task.gold_score(gold_value, value) >= 1.0)
            continue
        for unit, label in task.to_ratings(ext_id, value):
            units[unit][name] = label
            unit_item[unit] = ext_id
    n_labels = Counter(r[0] for r in rows)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(raters):
        mine, theirs, shared = [], [], set()
        for unit, labels in units.items():
            if name not in labels or len(labels) < 2:
                continue
            shared.add(unit_item[unit])
            majority = leave_self_out_majority(labels, name)
            if majority is not None:
                mine.append(labels[name])
                theirs.append(majority)
        times = durations.get(name)
        hits = gold.get(name, [])
        out[name] = {
            "labels": n_labels[name],
            "median_seconds": round(statistics.median(times) / 1000, 1) if times else None,
            "shared_items": len(shared),
            "kappa": kappa_against(mine, theirs) if len(shared) >= MIN_SHARED else None,
            "gold_items": len(hits),
            "gold_agreement": sum(hits) / len(hits) if hits else None,
        }
    return out
