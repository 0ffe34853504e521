"""Stage 2 and the annotation service (`tailor annotate`): relevance tasks out, its long-format export back in.

Why here: the service numbers attributes by position (`ID::1`, `ID::2`, ...) and knows nothing of the study's
(index, user_id, attribute text) items; the item file the tasks were exported from maps them back, so the
service's labels meet Re-Centering files and model votes item by item. A rating that names an unknown task or
attribute position is counted, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.agreement.ratings import Rating, RatingSet, merge_ratings, read_ratings
from tailorbench.errors import DataError
from tailorbench.files import Output
from tailorbench.threestage.recentering_formats import ATTR_SEP, Alignment, RelevanceItem, item_key


def export_relevance_tasks(items: Sequence[RelevanceItem], out: Output) -> dict[str, Any]:
    """Items -> the service's `relevance` items JSONL as the file output `out`: `{"id", "user_id", "prompt",
    "attributes", "meta"}`; id = the study index, attribute keys 1..n by position (what `from_relevance_export`
    reads back)."""
    written = out.write_jsonl(None, ({"id": str(it.index), "user_id": it.user_id, "prompt": it.prompt,
                                      "attributes": list(it.attributes),
                                      "meta": {"index": it.index, "prompt_index": it.prompt_index}}
                                     for it in items if it.attributes))
    return {"out": str(out.path()), "tasks": written, "skipped_items_without_attributes": len(items) - written,
            "import_with": "tailor annotate project create NAME --task-type relevance; "
                           "tailor annotate import NAME FILE"}


def _bool_label(label: Any) -> bool | None:
    """JSON booleans, or the `True`/`False` text of the service's CSV export."""
    if isinstance(label, bool):
        return label
    if isinstance(label, str) and label.strip().lower() in ("true", "false"):
        return label.strip().lower() == "true"
    return None


def from_relevance_export(items: Sequence[RelevanceItem], export: Sequence[str | Path]) -> tuple[RatingSet, Alignment]:
    """The service's `ratings.jsonl`/`.csv` (item `INDEX::POSITION`, label true/false) -> stage-2 ratings keyed
    like the Re-Centering files; the export's `group` is kept (human unless it says otherwise)."""
    raw = read_ratings(export)
    by_index = {it.index: it for it in items}
    report = Alignment()
    out = RatingSet(sources=raw.sources, missing=raw.missing.copy())
    for r in raw.ratings:
        tid, _, key = r.item.partition(ATTR_SEP)
        it = by_index.get(int(tid)) if tid.lstrip("-").isdigit() else None
        pos = int(key) - 1 if key.isdigit() else -1
        if it is None or not 0 <= pos < len(it.attributes):
            report.lines_for_unknown_items += 1
            out.missing["rating for an unknown task or attribute position"] += 1
            continue
        label = _bool_label(r.label)
        if label is None:
            raise DataError(r.source, r.line, "label", f"relevance labels are true or false, got {r.label!r}")
        out.ratings.append(Rating(item_key(it.index, it.user_id, it.attributes[pos]), r.rater, label, r.group,
                                  r.source, r.line))
    return merge_ratings([out]), report
