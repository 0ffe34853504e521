"""Annotation tools in and out: tailorbench items as Label Studio, Argilla (v2) or Potato projects, and those
tools' exports back into the long rating format (docs/interop.md).

One module per tool (`label_studio.py`, `argilla.py`, `potato.py`), each with `export(units, out, ...)` and
`read_export(path) -> (RatingSet, ImportReport)`; `units.py` holds what they share (the units, the recorded
answer sides, the mapping back to canonical labels, the counts). Above `annotate/` and `agreement/`, which
never import it: the CLI and the Python API call it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tailorbench.agreement.ratings import merge_ratings, read_ratings_file
from tailorbench.agreement.records import RatingSet
from tailorbench.errors import ConfigError, DataError
from tailorbench.interop import argilla, label_studio, potato
from tailorbench.interop.mapping import FieldMap, parse_map
from tailorbench.interop.units import ImportReport, ratings_of, units_from_items
from tailorbench.logs import get_logger

log = get_logger(__name__)

#: the tool formats, as users type them
FORMATS = ("label-studio", "argilla", "potato")
_READERS = {"label-studio": label_studio, "argilla": argilla, "potato": potato}


def check_format(fmt: str, allowed: tuple[str, ...] = FORMATS, flag: str = "--input-format") -> str:
    """`fmt` if it is one of `allowed`; else a ConfigError naming the flag (`--input-format` for what is read,
    `--output-format` for what is written)."""
    if fmt not in allowed:
        from tailorbench.registry import did_you_mean

        raise ConfigError(f"option {flag} must be one of {', '.join(allowed)}, got {fmt!r}"
                          f"{did_you_mean(fmt, allowed)}")
    return fmt


def detect_format(path: str | Path) -> str | None:
    """The tool whose export `path` is (Label Studio JSON, Argilla records, a Potato project), or None."""
    path = Path(path)
    for name, module in _READERS.items():
        if module.looks_like(path):
            return name
    return None


def export_items(items: str | Path, task: str, fmt: str, out: str | Path, seed: int = 0, min_submitted: int = 3,
                 predictions: list[str | Path] | None = None) -> dict[str, Any]:
    """Write the units of an items file as a `fmt` project under `out` (answer sides drawn with `seed`); judge
    verdicts in the long format (`predictions`) ride along as Label Studio predictions / Argilla suggestions."""
    check_format(fmt, flag="--output-format")
    units = units_from_items(items, task, seed)
    verdicts, others = ratings_of(merge_ratings(read_ratings_file(p) for p in predictions).ratings, units) \
        if predictions else (None, 0)
    out = Path(out)
    if fmt == "label-studio":
        files = label_studio.export(units, out, verdicts)
    elif fmt == "argilla":
        files = argilla.export(units, out, min_submitted, verdicts)
    else:
        if verdicts:
            raise ConfigError("Potato has no place for judge verdicts: --predictions works with label-studio "
                              "and argilla")
        files = potato.export(units, out)
    return {"format": fmt, "task": task, "units": len(units), "swapped": sum(u.swap for u in units),
            "seed": seed, "files": [str(f) for f in files], "predictions": sum(map(len, (verdicts or {}).values())),
            "predictions_not_exported": others}


def read_export(path: str | Path, fmt: str = "auto", fmap: FieldMap | str | None = None
                ) -> tuple[RatingSet, ImportReport]:
    """A tool's export -> (long-format ratings, counts); `auto` detects the tool from the content; `fmap` (or
    its `--map` text) says where a project tailorbench did not make keeps item, rater, question and answers."""
    if fmt == "auto":
        found = detect_format(path)
        if found is None:
            raise ConfigError(f"{path}: not a Label Studio, Argilla or Potato export; give --input-format")
        fmt = found
    mapping = parse_map(fmap) if isinstance(fmap, str) else fmap
    ratings, report = _READERS[check_format(fmt)].read_export(path, mapping)
    if report.ratings and report.unmappable:  # read in part: said, never silent (none read: require_ratings)
        first = report.unmappable[0]
        at = f"{first['path']}:{first['line']}" if first.get("line") is not None else str(first["path"])
        log.warning(f"{path}: {len(report.unmappable)} annotation(s) could not be read and are left out (the "
                    f"first, {at}: {first['reason']})")
    return ratings, report


def require_ratings(report: ImportReport, path: str | Path) -> None:
    """An import that maps nothing is an error naming why (exit 2), never an empty ratings file."""
    if report.ratings:
        return
    reasons = Counter(str(u["reason"]) for u in report.unmappable)
    reasons.update({k: v for k, v in report.not_rated.items() if k != "unmappable"})
    why = "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(3)) or "the export holds no annotations"
    found = detect_format(path)
    if found is not None and found != report.tool:
        raise DataError(path, None, None, f"read as {report.tool}, but it looks like a {found} export (no ratings "
                        f"read: {why}): give --input-format {found}, or --input-format auto")
    raise DataError(path, None, None, f"no ratings read from {report.annotations} annotation(s): {why}"
                    + ("" if report.mapping else " (a project tailorbench did not make: give --map)"))


def read_ratings_any(paths: list[str | Path], fmt: str = "auto", fmap: FieldMap | str | None = None,
                     notes: list[str] | None = None) -> RatingSet:
    """What `tailor agree` / `tailor tiers` read: each path a tool's export (detected, or all forced to `fmt`) or,
    under `auto`, whatever else the long-format reader reads; merged as `agreement.read_ratings` merges. A tool's
    export that gives no rating is an error with its reasons; its import notes (labels read as sides, responses
    without a status) are appended to `notes`, named by file."""
    if fmt != "auto":
        check_format(fmt, ("auto", "long", *FORMATS))
    parts = []
    for path in paths:
        tool = detect_format(path) if fmt == "auto" else (None if fmt == "long" else fmt)
        if tool is None:
            parts.append(read_ratings_file(path))
            continue
        ratings, report = read_export(path, tool, fmap)
        require_ratings(report, path)
        if notes is not None:
            notes.extend(f"{path}: {note}" for note in report.notes)
        parts.append(ratings)
    return merge_ratings(parts)


__all__ = ["FORMATS", "FieldMap", "ImportReport", "check_format", "detect_format", "export_items", "parse_map",
           "read_export", "read_ratings_any", "require_ratings"]
