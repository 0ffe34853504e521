"""Stage 1 and the annotation service (`tailor annotate`): `attributes` tasks out, its long-format export back in.

The service numbers attributes by position (`ID::1`, `ID::2`, ...); the stage-1 item file maps them back to the
study's (index, user_id, attribute text) items. A rating that names an unknown item or attribute position is
counted, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.agreement.ratings import Rating, RatingSet, merge_ratings, read_ratings
from tailorbench.files import Output
from tailorbench.threestage.recentering_formats import ATTR_SEP, Alignment, Stage1Item, item_key, read_stage1_items


def export_attribute_tasks(items_path: str | Path, out: Output) -> dict[str, Any]:
    """Items -> the annotation service's `attributes` task JSONL as the file output `out` (id = index; attribute
    keys 1..n by position)."""
    items = read_stage1_items(items_path)
    rows = []
    for it in items.values():
        if it.attributes:
            turns = [t for conv in it.conversations for t in (conv if isinstance(conv, list) else [conv])]
            rows.append({"id": str(it.index), "user_id": it.user_id, "conversation": turns,
                         "attributes": it.attributes, "meta": {"extractor": it.extractor, "source": it.source}})
    written = out.write_jsonl(None, rows)
    return {"out": str(out.path()), "tasks": written, "skipped_items_without_attributes": len(items) - written}


def from_annotation_export(items: dict[int, Stage1Item], export: Sequence[str | Path]) -> tuple[RatingSet, Alignment]:
    """The annotation service's long-format export (item `INDEX::POSITION`) -> stage-1 ratings."""
    raw = read_ratings(export)
    report = Alignment()
    out = RatingSet(sources=raw.sources, missing=raw.missing.copy())
    for r in raw.ratings:
        tid, _, key = r.item.partition(ATTR_SEP)
        it = items.get(int(tid)) if tid.isdigit() else None
        pos = int(key) - 1 if key.isdigit() else -1
        if it is None or not 0 <= pos < len(it.attributes):
            report.lines_for_unknown_items += 1
            out.missing["rating for an unknown item or attribute"] += 1
            continue
        out.ratings.append(Rating(item_key(it.index, it.user_id, it.attributes[pos]), r.rater, r.label, r.group,
                                  r.source, r.line))
    return merge_ratings([out]), report
