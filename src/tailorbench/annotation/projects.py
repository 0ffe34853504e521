"""Annotation projects: finding, creating and listing them, and importing their items (the whole file read and
checked by `importer.py` before anything is stored, then inserted in batches)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from tailorbench.annotation import tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.importer import read_import
from tailorbench.annotation.models import (
    Item,
    Member,
    Project,
)
from tailorbench.errors import ConfigError, DataError, TailorError


class NotFound(TailorError):
    """The thing does not exist or does not belong to the asking user (both look the same to them)."""


def find_project(s: Session, name_or_id: str | int) -> Project:
    """A project by name or id, or NotFound."""
    if isinstance(name_or_id, int):
        p = s.get(Project, name_or_id)
    else:
        p = s.scalar(select(Project).where(Project.name == name_or_id))
    if p is None:
        raise NotFound(f"no project {name_or_id!r}")
    return p


def create_project(db: Database, name: str, task_type: str, n_per_item: int = 3, instructions: str = "",
                   gold_every: int = 5) -> int:
    """A new project; returns its id."""
    task = tasks.check_task_type(task_type)  # ConfigError naming the registered types
    if not name.strip():
        raise ConfigError("project name must not be empty")
    if n_per_item < 1 or gold_every < 1:
        raise ConfigError("annotators per item and gold interval must be at least 1")
    with db.session() as s:
        if s.scalar(select(Project.id).where(Project.name == name)) is not None:
            raise ConfigError(f"project {name!r} already exists")
        p = Project(name=name, task_type=task, n_per_item=n_per_item, instructions=instructions,
                    gold_every=gold_every, next_seq=0)
        s.add(p)
        s.flush()
        return p.id


def list_projects(db: Database, user_id: int | None = None) -> list[dict[str, Any]]:
    """All projects (admin) or the projects `user_id` is a member of."""
    with db.session() as s:
        q = select(Project).order_by(Project.id)
        if user_id is not None:
            q = q.join(Member, Member.project_id == Project.id).where(Member.user_id == user_id)
        return [{"id": p.id, "name": p.name, "task_type": p.task_type, "n_per_item": p.n_per_item,
                 "instructions": p.instructions} for p in s.scalars(q)]


#: items inserted per statement by `import_items` (and the step of its progress reports)
IMPORT_BATCH = 1000


def import_items(db: Database, project: str | int, path: str | Path, fmt: str = "auto",
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Read and check the whole file, then insert every item in one transaction (all or nothing).
    `progress(rows read, rows stored)` is called while the file is read, once it is read and checked (nothing
    stored yet, no transaction open) and after every batch of `IMPORT_BATCH` stored rows."""
    with db.session() as s:
        task = tasks.task_type(find_project(s, project).task_type)
    used, items = read_import(path, task, fmt, None if progress is None else lambda n: progress(n, 0))
    if progress is not None:
        progress(len(items), 0)
    source = Path(path).name
    with db.session() as s:
        p = s.get(Project, find_project(s, project).id, with_for_update=True)
        assert p is not None
        ids = [it.ext_id for it in items]
        existing: set[str] = set()
        for start in range(0, len(ids), 500):
            existing.update(s.scalars(select(Item.ext_id).where(Item.project_id == p.id,
                                                                Item.ext_id.in_(ids[start:start + 500]))))
        for it in items:
            if it.ext_id in existing:
                raise DataError(path, it.line, "id", f"item {it.ext_id!r} is already in project {p.name!r}")
        seq = p.next_seq
        for start in range(0, len(items), IMPORT_BATCH):
            s.execute(insert(Item), [
                {"project_id": p.id, "ext_id": it.ext_id, "seq": seq + start + i, "payload": it.payload,
                 "is_gold": it.gold is not None, "gold": it.gold, "n_assigned": 0, "source": f"{source}:{it.line}"}
                for i, it in enumerate(items[start:start + IMPORT_BATCH])])
            if progress is not None:
                progress(len(items), min(start + IMPORT_BATCH, len(items)))
        p.next_seq = seq + len(items)
    n_gold = sum(it.gold is not None for it in items)
    return {"project": str(project), "format": used, "items": len(items) - n_gold, "gold_items": n_gold}
