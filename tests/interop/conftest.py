"""Shared pieces of the tool round trips: the items files of the annotation tests, three annotators' canonical
labels for every unit, and each tool's export written from those labels as the tool documents it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tailorbench.agreement.records import Label, Rating, RatingSet
from tailorbench.annotation.tasks import JUDGMENTS

ITEMS = Path(__file__).resolve().parents[1] / "annotation" / "data"
DATA = Path(__file__).resolve().parent / "data"
TASKS = ("pairwise", "attributes", "relevance", "ab_rating")
RATERS = ("ann1", "ann2", "ann3")
LABELS: dict[str, list[Label]] = {"pairwise": ["A", "B"], "attributes": list(JUDGMENTS),
                                  "relevance": [True, False], "ab_rating": [-2, -1, 0, 1, 2]}


def items_file(task: str) -> Path:
    return ITEMS / f"{task}.jsonl"


def labels_for(units: list[dict[str, Any]], task: str, seed: int = 7) -> dict[tuple[str, str], Label]:
    """(unit id, rater) -> canonical label; raters agree more often than chance so kappas are not all zero."""
    rng = random.Random(seed)
    out: dict[tuple[str, str], Label] = {}
    for u in units:
        truth = rng.choice(LABELS[task])
        for rater in RATERS:
            out[u["tb_unit"], rater] = truth if rng.random() < 0.7 else rng.choice(LABELS[task])
    return out


def direct(labels: dict[tuple[str, str], Label]) -> RatingSet:
    """The same labels given directly in the long format."""
    return RatingSet(ratings=[Rating(uid, rater, label) for (uid, rater), label in labels.items()])


def shown(task: str, swap: bool, label: Label) -> Any:
    """What the annotator clicked for a canonical label: the side (pairwise), the 1..5 score of answer 2 against
    answer 1 (A/B rating), else the label itself (written independently of the package's own inverse)."""
    if task == "pairwise":
        return {"A": "right", "B": "left"}[str(label)] if swap else {"A": "left", "B": "right"}[str(label)]
    if task == "ab_rating":
        assert isinstance(label, int)
        return 3 - label if swap else 3 + label
    if task == "relevance":
        return "yes" if label else "no"
    return label


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def unit_key(export_dir: Path) -> dict[str, dict[str, Any]]:
    """The export's key file (tailorbench-key.json): each opaque reference (`tb_ref`) -> its unit (`tb_unit`,
    `tb_item`, `tb_task`, `tb_swap`). The tests' annotators know the truth, so they read it; a tool never sees it."""
    units: dict[str, dict[str, Any]] = read_json(export_dir / "tailorbench-key.json")["units"]
    return units
