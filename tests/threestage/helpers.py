"""Fixture writers in the exact shapes of the Re-Centering annotation tool (tests build their own data)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def attrs_of(i: int, n_attr: int) -> list[str]:
    return [f"The user of item {i} has trait {j}." for j in range(n_attr)]


def human_rows(name: str, labels: np.ndarray, n_attr: int, items: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """labels: (n_items, n_attr) 0/1, -1 = attribute not judged by this annotator."""
    rows = []
    for i in items if items is not None else range(labels.shape[0]):
        judged = [
            {"attribute": a, "relevant": bool(labels[i, j])}
            for j, a in enumerate(attrs_of(i, n_attr))
            if labels[i, j] >= 0
        ]
        rows.append({
            "task": "3", "index": i, "user_id": f"u{i % 7}", "prompt_index": i % 3,
            "relevance_judgments": judged, "annotator": name, "note": "", "flagged": False,
            "timestamp": "2026-03-20T10:00:00",
        })
    return rows


def model_rows(name: str, labels: np.ndarray, n_attr: int) -> list[dict[str, Any]]:
    return [
        {
            "model": name, "sample_index": i, "user_id": f"u{i % 7}",
            "items": [
                {"attribute": a, "relevant": bool(labels[i, j]), "raw_answer": "YES" if labels[i, j] else "NO"}
                for j, a in enumerate(attrs_of(i, n_attr))
                if labels[i, j] >= 0
            ],
        }
        for i in range(labels.shape[0])
    ]


def service_round_trip(
    tmp_path: Path, task: str, tasks_file: Path, answer: Any, annotators: Sequence[str], n_per_item: int
) -> Path:
    """Import `tasks_file` into a real annotation-service project (SQLite), let each annotator label every item
    through `service.submit` with the form `answer(annotator, payload, layout)` returns, export; returns the
    export directory (ratings.jsonl, items.jsonl, ...)."""
    from tailorbench.annotation import service
    from tailorbench.annotation.db import Database, resolve_url
    from tailorbench.annotation.models import Assignment, Item

    db = Database(resolve_url(None, tmp_path / f"annot-{task}"))
    try:
        service.create_project(db, "p", task, n_per_item=n_per_item)
        service.import_items(db, "p", tasks_file)
        uids = {name: service.add_user(db, name, projects=["p"])[0] for name in annotators}
        pid = service.list_projects(db)[0]["id"]
        for name, uid in uids.items():
            while True:
                with db.session() as s:
                    a = service.next_assignment(s, uid, pid)
                    if a is None:
                        break
                    row = s.get(Assignment, a.id)
                    item = s.get(Item, row.item_id) if row is not None else None
                    assert row is not None and item is not None
                    service.submit(s, uid, a.id, answer(name, item.payload, row.layout))
        out = tmp_path / f"export-{task}"
        service.export(db, "p", out)
        return out
    finally:
        db.dispose()
