"""What the study builds between stages from people's labels, shared by `run` (which writes it) and `plan` (which
counts the model calls it leads to): stage 2's items from stage 1's human majority, and the labels of a stage
read from its export or, before the export, from the annotation database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.errors import DataError
from tailorbench.humanstudy.config import StudyConfig


def database(config: StudyConfig, study_dir: str | Path, readonly: bool = False) -> Any:
    """The study's annotation database: `annotation.db` (else $TAILOR_ANNOTATE_DB), else SQLite under
    STUDY_DIR/annotation. `readonly` (a reader such as `status`): nothing is created, a SQLite database that is
    missing is a ConfigError naming it."""
    import os

    from tailorbench.annotation.db import Database, check_exists, resolve_url

    url = resolve_url(config.annotation.db or os.environ.get("TAILOR_ANNOTATE_DB"), Path(study_dir) / "annotation",
                      create=not readonly)
    if readonly:
        check_exists(url)
    return Database(url)


def relevance_rows(stage1_items: Path, stage1_export: Path, prompts: Path) -> tuple[list[dict[str, Any]],
                                                                                     dict[str, Any]]:
    """Stage-2 items: for each user, each of their prompts (in file order) with the attributes stage 1's human
    majority accepted, in extraction order (a tie or uncertain/rejected majority leaves an attribute out; a user
    with none accepted gets no item, counted). Returns (rows, counts)."""
    from tailorbench.threestage import verbs
    from tailorbench.threestage.extraction.analysis import majority_labels
    from tailorbench.threestage.recentering_formats import jsonl, split_key

    parsed, ratings, _ = verbs.stage1_ratings(stage1_items, export=[stage1_export])
    accepted: dict[str, set[str]] = {}
    for key, label in majority_labels(ratings).items():
        _, user, attribute = split_key(key)
        if label == "accepted":
            accepted.setdefault(user, set()).add(attribute)
    order = {it.user_id: list(it.attributes) for it in parsed.values()}
    rows: list[dict[str, Any]] = []
    no_attribute: set[str] = set()
    per_user: dict[str, int] = {}
    for line, rec in jsonl(prompts):
        for field in ("user_id", "prompt"):
            value = rec.get(field)
            if not isinstance(value, str) or not value.strip():
                raise DataError(prompts, line, field, "must be a non-empty string")
        user, prompt = str(rec["user_id"]), str(rec["prompt"])
        attrs = [a for a in order.get(user, []) if a in accepted.get(user, set())]
        if not attrs:
            no_attribute.add(user)
            continue
        pi = rec.get("prompt_index")
        if pi is not None and (isinstance(pi, bool) or not isinstance(pi, int) or pi < 0):
            raise DataError(prompts, line, "prompt_index", f"expected a whole number of 0 or more, got {pi!r}")
        rows.append({"index": len(rows), "user_id": user,
                     "prompt_index": pi if pi is not None else per_user.get(user, 0),
                     "prompt": prompt, "attributes": attrs})
        per_user[user] = per_user.get(user, 0) + 1
    return rows, {"items": len(rows), "users": len(per_user),
                  "users_without_accepted_attributes": sorted(no_attribute)}


def item_ids(path: Path, stage: str) -> set[str]:
    """The ids of an items file of the stage's task type (the stage's tasks, or its gold items), read and checked
    by the annotation service's importer, the reader `annotate import-items` uses: a malformed, id-less,
    non-UTF-8 or list-shaped line is a DataError naming the file and line."""
    from tailorbench.annotation.importer import read_import
    from tailorbench.humanstudy.config import TASK_TYPE

    return {item.ext_id for item in read_import(path, TASK_TYPE[stage])[1]}


def labels_from_database(db: Any, project: str, out: Path) -> Path | None:
    """A stage's labels as its export's ratings.jsonl would hold them, written to `out` (outside the study),
    once every item has its N labels; None before."""
    from tailorbench.agreement.ratings import write_ratings_jsonl
    from tailorbench.annotation import service

    got = service.progress(db, project)
    if got["labels_done"] < got["labels_needed"]:
        return None
    write_ratings_jsonl(service.ratings(db, project).ratings, out)
    return out
