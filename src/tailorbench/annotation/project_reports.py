"""What an admin reads of an annotation project: progress, agreement so far, flagged items, the items and raw
labels with the platform ids of crowd participants, and the export (ratings in long format, CSV and JSONL)."""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tailorbench.agreement.ratings import Rating, RatingSet, write_ratings_jsonl
from tailorbench.annotation import tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import (
    Assignment,
    Item,
    Label,
    Member,
    Participant,
    Study,
    User,
)
from tailorbench.annotation.projects import find_project
from tailorbench.errors import TailorError
from tailorbench.files import Output


def progress(db: Database, project: str | int) -> dict[str, Any]:
    """Progress of a project overall and per annotator, with each annotator's gold score. Per annotator,
    `assigned` and `done` count every item, gold included (`gold_done` of them gold); the project's
    `labels_done` counts the labels of regular items, towards `labels_needed` (regular items x N)."""
    with db.session() as s:
        p = find_project(s, project)
        n_items = s.scalar(select(func.count()).select_from(Item).where(Item.project_id == p.id,
                                                                        Item.is_gold.is_(False))) or 0
        n_gold = s.scalar(select(func.count()).select_from(Item).where(Item.project_id == p.id,
                                                                       Item.is_gold.is_(True))) or 0
        per_item = Counter(s.scalars(select(Label.item_id).join(Item, Item.id == Label.item_id).where(
            Label.project_id == p.id, Item.is_gold.is_(False))))
        per_user: dict[int, dict[str, Any]] = {}
        for uid, name in s.execute(select(User.id, User.name).join(Member, Member.user_id == User.id)
                                   .where(Member.project_id == p.id).order_by(User.name)):
            per_user[uid] = {"annotator": name, "assigned": 0, "done": 0, "gold_done": 0, "gold_score": None,
                             "flagged": 0, "last_submission": None}
        for uid, done, n in s.execute(
            select(Assignment.user_id, Assignment.done, func.count())
            .where(Assignment.project_id == p.id).group_by(Assignment.user_id, Assignment.done)
        ):
            row = per_user.setdefault(uid, {"annotator": str(uid), "assigned": 0, "done": 0, "gold_done": 0,
                                            "gold_score": None, "flagged": 0, "last_submission": None})
            # one definition of "done" everywhere: finished items, gold included (as a study's quota and the
            # quality block count them); `gold_done` says how many of them were gold
            row["assigned"] += n
            row["done"] += n if done else 0
        scores: dict[int, list[float]] = defaultdict(list)
        task = tasks.task_type(p.task_type)
        for label, item in s.execute(select(Label, Item).join(Item, Item.id == Label.item_id)
                                     .where(Label.project_id == p.id)):
            row = per_user[label.user_id]
            row["flagged"] += label.flagged
            stamp = label.submitted_at.isoformat()
            row["last_submission"] = max(row["last_submission"] or stamp, stamp)
            if item.is_gold:
                scores[label.user_id].append(task.gold_score(item.gold, label.value))
        for uid, vals in scores.items():
            per_user[uid]["gold_done"] = len(vals)
            per_user[uid]["gold_score"] = sum(vals) / len(vals)
        labels_done = sum(per_item.values())
        return {
            "project": p.name,
            "task_type": p.task_type,
            "n_per_item": p.n_per_item,
            "items": n_items,
            "gold_items": n_gold,
            "labels_needed": n_items * p.n_per_item,
            "labels_done": labels_done,
            "items_complete": sum(1 for n in per_item.values() if n >= p.n_per_item),
            "percent_done": round(100.0 * labels_done / (n_items * p.n_per_item), 1) if n_items else 0.0,
            "annotators": list(per_user.values()),
        }


def ratings(db: Database, project: str | int, include_gold: bool = False) -> RatingSet:
    """The project's labels in the long rating format (rater = annotator name, group = human)."""
    with db.session() as s:
        p = find_project(s, project)
        q = (select(Item.ext_id, User.name, Label.value).join(Item, Item.id == Label.item_id)
             .join(User, User.id == Label.user_id).where(Label.project_id == p.id).order_by(Item.seq, User.name))
        if not include_gold:
            q = q.where(Item.is_gold.is_(False))
        out = RatingSet(sources=[f"annotation project {p.name}"])
        task = tasks.task_type(p.task_type)
        for ext_id, rater, value in s.execute(q):
            for item, label in task.to_ratings(ext_id, value):
                out.ratings.append(Rating(item, rater, label, "human", out.sources[0], None))
        return out


def agreement_so_far(db: Database, project: str | int, resamples: int = 200) -> dict[str, Any]:
    """The agreement report (agreement/) of the labels so far, or a note saying why there is none yet."""
    from tailorbench.agreement.report import AgreeOptions, agreement_report

    with db.session() as s:
        task = tasks.task_type(find_project(s, project).task_type)
    rs = ratings(db, project)
    per_item = Counter(r.item for r in rs.ratings)
    if len({r.rater for r in rs.ratings}) < 2 or not any(n >= 2 for n in per_item.values()):
        return {"available": False, "note": "agreement needs at least one item rated by two annotators"}
    try:
        report = agreement_report(rs, task.agreement_order, AgreeOptions(n_resamples=resamples))
    except TailorError as exc:
        return {"available": False, "note": str(exc)}
    return {"available": True, "n_ratings": len(rs.ratings), "report": report}


def flagged(db: Database, project: str | int) -> list[dict[str, Any]]:
    with db.session() as s:
        p = find_project(s, project)
        q = (select(Item.ext_id, User.name, Label.note, Label.submitted_at).join(Item, Item.id == Label.item_id)
             .join(User, User.id == Label.user_id).where(Label.project_id == p.id, Label.flagged.is_(True))
             .order_by(Label.submitted_at))
        return [{"item": i, "annotator": u, "note": n, "submitted_at": t.isoformat()} for i, u, n, t in s.execute(q)]


def items_records(db: Database, project: str | int) -> list[dict[str, Any]]:
    """The project's items as imported (pairwise: the items format `tailor tiers --items` reads)."""
    with db.session() as s:
        p = find_project(s, project)
        out = []
        for item in s.scalars(select(Item).where(Item.project_id == p.id).order_by(Item.seq)):
            rec = dict(item.payload)
            if item.is_gold:
                rec["gold"] = item.gold
            out.append(rec)
        return out


NO_PLATFORM_IDS: dict[str, str | None] = {"external_id": None, "external_study_id": None,
                                          "external_session_id": None}


def platform_ids(s: Session, project_id: int) -> dict[int, dict[str, str | None]]:
    """{user id: external_id, external_study_id, external_session_id} of the project's study participants,
    for the exports."""
    q = (select(Participant.user_id, Participant.external_id, Participant.external_study_id,
                Participant.external_session_id).join(Study, Study.id == Participant.study_id)
         .where(Study.project_id == project_id))
    return {uid: {"external_id": e, "external_study_id": st, "external_session_id": se}
            for uid, e, st, se in s.execute(q)}


def raw_labels(db: Database, project: str | int) -> list[dict[str, Any]]:
    """Every label with what the long format cannot hold: shown order, notes, flags, timing, gold, and a crowd
    study participant's platform ids (`external_id`, `external_study_id`, `external_session_id`; None else)."""
    with db.session() as s:
        p = find_project(s, project)
        task = tasks.task_type(p.task_type)
        crowd = platform_ids(s, p.id)
        q = (select(Label, Item, User, Assignment).join(Item, Item.id == Label.item_id)
             .join(User, User.id == Label.user_id).join(Assignment, Assignment.id == Label.assignment_id)
             .where(Label.project_id == p.id).order_by(Label.id))
        out = []
        for label, item, user, a in s.execute(q):
            out.append({"item": item.ext_id, "rater": user.name, "task_type": p.task_type, "value": label.value,
                        "shown_order": task.shown_order(a.layout),
                        "gold": item.gold if item.is_gold else None, "flagged": label.flagged, "note": label.note,
                        "duration_ms": label.duration_ms, "server_ms": label.server_ms,
                        "submitted_at": label.submitted_at.isoformat(),
                        **crowd.get(user.id, NO_PLATFORM_IDS)})
        return out


def write_ratings_csv(rs: RatingSet, out: Output, name: str) -> None:
    with out.writing(name) as handle:
        w = csv.writer(handle)
        w.writerow(["item", "rater", "label", "group"])
        for r in rs.ratings:
            w.writerow([r.item, r.rater, r.label, r.group])


def export(db: Database, project: str | int, out_dir: str | Path, include_gold: bool = False,
           min_ratings: int | None = None, easy: float = 0.75, medium: float = 0.6) -> dict[str, Any]:
    """Write ratings.jsonl / ratings.csv (long format), items.jsonl, labels.jsonl (raw) and the task type's own
    files (pairwise: benchmark.jsonl, PairCase with majority labels and agreement tiers, plus tiers.json)."""
    door = Output("--out", Path(out_dir), directory=True, made_by="tailor annotate export")
    out = door.ensure()
    rs = ratings(db, project, include_gold=include_gold)
    write_ratings_jsonl(rs.ratings, door.path("ratings.jsonl"))
    write_ratings_csv(rs, door, "ratings.csv")
    items = items_records(db, project)
    door.write_jsonl("items.jsonl", items)
    door.write_jsonl("labels.jsonl", raw_labels(db, project))
    files = ["ratings.jsonl", "ratings.csv", "items.jsonl", "labels.jsonl"]
    summary: dict[str, Any] = {"out": str(out), "ratings": len(rs.ratings), "items": len(items)}
    with db.session() as s:
        p = find_project(s, project)
        task, n = tasks.task_type(p.task_type), p.n_per_item
    summary.update(task.export_extra(out, rs, tasks.ExportOptions(n, min_ratings, easy, medium)))
    files += task.export_files
    summary["files"] = files
    summary["exported_at"] = datetime.now(timezone.utc).isoformat()
    return summary
