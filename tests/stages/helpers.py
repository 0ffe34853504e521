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
