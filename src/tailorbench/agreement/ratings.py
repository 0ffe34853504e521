"""The long rating format every agreement statistic reads: one rating per line.

`{"item": str, "rater": str, "label": str|int|bool, "group": "human"|"model"}` as JSONL or CSV. The
annotation service exports exactly this format; run directories are read into it too, so an LLM judge's
verdicts meet the humans' labels on the same items. Every rating that is not used (null label, judge verdict
that is not ok) is counted in `RatingSet.missing`, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tailorbench.agreement.records import DEFAULT_GROUP, GROUPS, Label, Rating, RatingSet
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import read_csv

_FIELDS = ("item", "rater", "label", "group")


def label_kind(label: Label) -> str:
    """The type name used to refuse files that mix label types (1 and "1" must not silently differ)."""
    if isinstance(label, bool):
        return "bool"
    if isinstance(label, int):
        return "int"
    return "str"


def _check_label(value: Any, path: str, line: int) -> Label | None:
    if value is None:
        return None
    if isinstance(value, bool | int | str):
        if isinstance(value, str) and not value.strip():
            raise DataError(path, line, "label", "empty label; use null for a missing rating")
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise DataError(path, line, "label", f"must be a string, an integer or a boolean, got {value!r}")


def _check_text(record: dict[str, Any], key: str, path: str, line: int, default: str | None = None) -> str:
    value = record.get(key, default)
    if value is None:
        raise DataError(path, line, key, "missing")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DataError(path, line, key, f"must be a string, got {value!r}")
    text = str(value).strip()
    if not text:
        raise DataError(path, line, key, "must not be empty")
    return text


def _from_records(records: Iterable[tuple[int, dict[str, Any]]], path: str) -> RatingSet:
    out = RatingSet(sources=[path])
    seen: dict[tuple[str, str], int] = {}
    for line, record in records:
        item = _check_text(record, "item", path, line)
        rater = _check_text(record, "rater", path, line)
        group = _check_text(record, "group", path, line, default=DEFAULT_GROUP)
        if group not in GROUPS:
            raise DataError(path, line, "group", f"must be one of {', '.join(GROUPS)}, got {group!r}")
        if (item, rater) in seen:
            raise DataError(
                path,
                line,
                "rater",
                f"rater {rater!r} already rated item {item!r} on line {seen[item, rater]}",
            )
        seen[item, rater] = line
        if "label" not in record:
            raise DataError(path, line, "label", "missing (use null for a missing rating)")
        label = _check_label(record["label"], path, line)
        if label is None:
            out.missing["null label"] += 1
            continue
        out.ratings.append(Rating(item, rater, label, group, path, line))
    return out


def _csv_label(text: str) -> Label | None:
    """A CSV cell's label: an integer when written as one (digits, an optional minus: "1_0" and "٣" stay text,
    though `int()` would take them), else the text; empty: no rating."""
    if text == "":
        return None
    digits = text[1:] if text.startswith("-") else text
    return int(text) if digits.isascii() and digits.isdigit() else text


def _csv_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line_no, record in read_csv(path, "a ratings CSV (item, rater, label, group)", ("item", "rater", "label")):
        values: dict[str, Any] = {k: v for k, v in record.items() if k in _FIELDS}
        values["label"] = _csv_label((record.get("label") or "").strip())
        if not values.get("group"):
            values.pop("group", None)
        yield line_no, values


def _check_label_types(ratings: RatingSet) -> None:
    first: dict[str, Rating] = {}
    for rating in ratings.ratings:
        kind = label_kind(rating.label)
        first.setdefault(kind, rating)
        if len(first) > 1:
            (kind_a, ra), (kind_b, rb) = list(first.items())[:2]
            raise DataError(
                rb.source,
                rb.line,
                "label",
                f"label {rb.label!r} is {kind_b} but {ra.source}:{ra.line} has {kind_a} label {ra.label!r};"
                " use one label type (write numbers as numbers, or every label as a string)",
            )


def read_ratings_file(path: str | Path) -> RatingSet:
    """Read a long-format file (.jsonl/.json lines or .csv) or a run directory into ratings."""
    path = Path(path)
    if path.is_dir():
        from tailorbench.agreement.runs import read_run_dir

        return read_run_dir(path)
    if not path.exists():
        raise DataError(path, None, None, "no such file")
    if path.suffix.lower() == ".csv":
        return _from_records(_csv_records(path), str(path))
    return _from_records(read_jsonl(path, InvalidRows()), str(path))


def read_ratings(paths: Iterable[str | Path]) -> RatingSet:
    """Read and merge several sources (e.g. human export + judge runs); labels must share one type."""
    return merge_ratings(read_ratings_file(path) for path in paths)


def merge_ratings(parts: Iterable[RatingSet]) -> RatingSet:
    """Merge rating sets from several sources; a rater rating one item twice anywhere is an error naming both
    places, and labels must share one type (importers of other shapes merge through here too)."""
    merged = RatingSet()
    seen: dict[tuple[str, str], Rating] = {}
    for part in parts:
        for rating in part.ratings:
            prev = seen.get((rating.item, rating.rater))
            if prev is not None:
                raise DataError(
                    rating.source,
                    rating.line,
                    "rater",
                    f"rater {rating.rater!r} already rated item {rating.item!r} in {prev.source}:{prev.line}",
                )
            seen[rating.item, rating.rater] = rating
        merged.extend(part)
    _check_label_types(merged)
    return merged


def write_ratings_jsonl(ratings: Iterable[Rating], path: str | Path) -> None:
    """Write ratings in the long format (the annotation service's export uses the same writer), atomically."""
    from tailorbench.files import write_jsonl_atomic

    write_jsonl_atomic(path, ({"item": r.item, "rater": r.rater, "label": r.label, "group": r.group}
                              for r in ratings))


def read_annotation_export(path: str | Path) -> RatingSet:
    """The annotation service exports the long format itself (JSONL or CSV), so this is the plain reader."""
    return read_ratings_file(path)
