"""`tailor study status`: where the study stands, per stage: each step's status, the labels done and wanted, each
annotator's quality (median time, agreement with the others' majority as kappa, gold) and the crowd study's
open places. Reads the state and the annotation database; writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.humanstudy.config import load_config
from tailorbench.humanstudy.plan import build_steps
from tailorbench.humanstudy.state import StudyState

#: what status shows of annotation/quality.py's figures per annotator
QUALITY_FIELDS = ("labels", "median_seconds", "kappa", "majority_agreement", "gold_items", "gold_agreement")


def study_status(study_dir: str | Path) -> dict[str, Any]:
    from tailorbench.humanstudy.run import database

    study_dir = Path(study_dir)
    config = load_config(study_dir)
    state = StudyState(study_dir, readonly=True)
    steps = build_steps(config, study_dir, state)
    stages: dict[str, Any] = {}
    db = None
    try:
        for stage in config.run_stages():
            mine = [s for s in steps if s.stage == stage]
            current = next((s for s in mine if s.status != "done"), None)
            entry: dict[str, Any] = {"step": current.id if current else "done",
                                     "steps": {s.id: s.status for s in mine}}
            annotate = next(s for s in mine if s.kind == "annotation")
            project = state.info(annotate.id).get("project")
            if project is not None and annotate.status == "done":
                db = db or database(config, study_dir, readonly=True)
                entry.update(_annotation(db, project))
            stages[stage] = entry
    finally:
        if db is not None:
            db.dispose()
    return {"study": config.name, "dir": str(study_dir), "stages": stages,
            "finished": all(s.status == "done" for s in steps)}


def _annotation(db: Any, project: str) -> dict[str, Any]:
    """Labels done / wanted, per-annotator quality and the crowd study's open places of one stage's project."""
    from tailorbench.annotation import quality, service, studies

    got = service.progress(db, project)
    out: dict[str, Any] = {"project": project, "labels_done": got["labels_done"],
                           "labels_wanted": got["labels_needed"],
                           "missing": got["labels_needed"] - got["labels_done"]}
    out["annotators"] = {name: {k: q.get(k) for k in QUALITY_FIELDS}
                         for name, q in quality.annotator_quality(db, project).items()}
    crowd = [s for s in studies.list_studies(db) if s["project"] == project]
    if crowd:
        s = crowd[0]
        taken = s["participants"].get("finished", 0) + s["participants"].get("active", 0)
        out["crowd"] = {"study": s["id"], "state": s["state"], "places": s["max_participants"],
                        "open_places": max(0, s["max_participants"] - taken), "participants": s["participants"]}
    return out
