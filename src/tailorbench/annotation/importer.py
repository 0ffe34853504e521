"""Imports: PairCase JSONL, construction-pipeline output, or one JSONL per task type -> validated items.

The whole file is read and checked before anything is written; the service then inserts it in one
transaction, so a bad line never leaves half an import behind. Every error names file, line and field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from tailorbench.annotation.tasks import TASK_TYPES, ItemError, TaskType, task_type
from tailorbench.datasets.native import declared_names, read_native
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.registry import did_you_mean
from tailorbench.schema import PairCase, id_problem

ImportFormat = Literal["auto", "paircase", "pipeline", "items", "benchmark"]
#: `benchmark`: a benchmark in any registered layout other than native JSONL (a PersonaFeedback folder, a
#: plugin's layout), read by that layout with its own split, tier and field names
FORMATS: tuple[str, ...] = ("auto", "paircase", "pipeline", "items", "benchmark")
#: how deep an item's objects and lists may nest (a persona is a few levels; the JSON encoders, the page
#: renderer and the databases' JSON functions all have lower limits than a hostile file)
MAX_DEPTH = 32
#: the longest item id the database column holds
MAX_ID_CHARS = 300
#: `read_import` reports the rows read so far after every this many
REPORT_EVERY = 1000

#: `on_row(rows read so far)`, called while a file is read
OnRow = Callable[[int], None] | None


def _counted(out: list[ParsedItem], item: ParsedItem, on_row: OnRow) -> None:
    out.append(item)
    if on_row is not None and len(out) % REPORT_EVERY == 0:
        on_row(len(out))


@dataclass(frozen=True)
class ParsedItem:
    ext_id: str
    payload: dict[str, Any]
    gold: Any
    line: int


def nesting_depth(value: Any) -> int:
    """How deeply `value`'s dicts and lists nest (a scalar: 0), without recursion (the value may be hostile)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:  # deep enough to refuse: stop looking
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _nonblank_lines(path: Path) -> list[int]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(path, None, None, f"cannot read file: {exc.strerror or exc}") from exc
    return [n for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]


def _layout_of(path: Path) -> str | None:
    """The registered benchmark layout that reads `path`, if any (None where none does)."""
    from tailorbench.datasets.loader import find_layout

    try:
        return find_layout(path).name
    except DataError:
        return None


def detect_format(path: Path, task: TaskType) -> str:
    """The format `--format auto` picks: a benchmark a registered layout other than native / scored reads
    (where the task type takes benchmarks), else the task type decides (pairwise: paircase when rows have
    tier + chosen, pipeline for chosen without tier, else items; every other built-in type: items)."""
    if "benchmark" in task.import_formats and _layout_of(path) not in (None, "native", "scored"):
        return "benchmark"
    if not path.is_file():
        raise DataError(path, None, None, "not a file (a folder imports only as a benchmark a layout reads)")
    return task.detect_format(path)


def _pair_payload(case_id: str, split: str, user_id: str, persona: dict[str, Any], question: str, chosen: str,
                  rejected: str, meta: dict[str, Any]) -> dict[str, Any]:
    """A PairCase-like row as a pairwise item: answer A = the source's `chosen` (recorded in meta as
    `source_chosen`); annotators still see A and B in a random order per assignment."""
    return {
        "id": case_id,
        "split": split,
        "user_id": user_id,
        "persona": persona,
        "question": question,
        "answer_a": chosen,
        "answer_b": rejected,
        "meta": {**meta, "source_chosen": "A"},
    }


def _gold_from_meta(meta: dict[str, Any]) -> str | None:
    """PairCase rows mark an attention item with `meta.gold: true`: the source's chosen answer is expected."""
    return "A" if meta.get("gold") is True else None


def _pair_items(numbered: Iterable[tuple[int, PairCase]], on_row: OnRow) -> list[ParsedItem]:
    out: list[ParsedItem] = []
    for line, case in numbered:
        meta = {**case.meta, "source_tier": case.tier}
        payload = _pair_payload(case.id, case.split, case.user_id, case.persona, case.question, case.chosen,
                                case.rejected, meta)
        _counted(out, ParsedItem(case.id, payload, _gold_from_meta(case.meta), line), on_row)
    return out


def _check_splits(path: Path, items: list[ParsedItem]) -> None:
    """Every pairwise item's split is one the file declares (its `<name>.layout.json` sidecar, the native
    layout's convention, else PersonaFeedback's): a typo (`Generals`) never becomes a split."""
    splits, _ = declared_names(path)
    for it in items:
        split = it.payload.get("split")
        if split is not None and split not in splits:
            raise DataError(path, it.line, "split", f"unknown split {split!r} (declared: {', '.join(splits)}; "
                                                    f"declare others in {path.stem}.layout.json)")


def _read_paircase(path: Path, on_row: OnRow = None) -> list[ParsedItem]:
    splits, tiers = declared_names(path)
    return _pair_items(zip(_nonblank_lines(path), read_native(path, InvalidRows(), splits, tiers)), on_row)


def _read_benchmark(path: Path, on_row: OnRow = None) -> list[ParsedItem]:
    """Any layout's benchmark, read by its layout (its splits, tiers and field names); lines are case numbers."""
    from tailorbench.datasets.loader import load_benchmark

    return _pair_items(enumerate(load_benchmark(path).cases, start=1), on_row)


def _read_pipeline(path: Path, task: TaskType, on_row: OnRow = None) -> list[ParsedItem]:
    out: list[ParsedItem] = []
    for line, row in read_jsonl(path, InvalidRows()):
        case_id = row.get("id") or f"{path.stem}:{line}"
        try:
            _, payload, _ = task.item_from_row(
                {**row, "id": case_id, "answer_a": row.get("chosen"), "answer_b": row.get("rejected")},
            )
        except ItemError as exc:
            field = {"answer_a": "chosen", "answer_b": "rejected"}.get(exc.field, exc.field)
            raise DataError(path, line, field, exc.message) from None
        if payload["answer_a"] == payload["answer_b"]:
            raise DataError(path, line, "rejected", "identical to 'chosen': not a pair")
        payload["meta"]["source_chosen"] = "A"
        _counted(out, ParsedItem(payload["id"], payload, _gold_from_meta(payload["meta"]), line), on_row)
    return out


def _read_items(path: Path, task: TaskType, on_row: OnRow = None) -> list[ParsedItem]:
    out: list[ParsedItem] = []
    for line, row in read_jsonl(path, InvalidRows()):
        try:
            ext_id, payload, gold = task.item_from_row(row)
        except ItemError as exc:
            raise DataError(path, line, exc.field, exc.message) from None
        _counted(out, ParsedItem(ext_id, payload, gold, line), on_row)
    return out


def read_import(path: str | Path, task: TaskType | str, fmt: str = "auto",
                on_row: OnRow = None) -> tuple[str, list[ParsedItem]]:
    """(format used, items) of a whole file; raises DataError on the first bad line or duplicate id. The
    paircase and pipeline readers build pairwise payloads; a task type accepts them by listing them in its
    `import_formats`. `on_row(n)` hears of the rows read so far, every REPORT_EVERY rows."""
    path = Path(path)
    if isinstance(task, str):
        task = task_type(task)
    if fmt not in FORMATS:
        raise DataError(path, None, None, f"unknown import format {fmt!r}{did_you_mean(fmt, FORMATS)}; choose one of "
                        f"{', '.join(FORMATS)}")
    if not path.exists():
        raise DataError(path, None, None, "no such file")
    if fmt == "auto":
        fmt = detect_format(path, task)
    if fmt != "benchmark" and not path.is_file():
        raise DataError(path, None, None, "not a file (a folder imports only as a benchmark a layout reads)")
    if fmt not in task.import_formats:
        takers = [name for name, cls in TASK_TYPES.load_all() if fmt in cls.import_formats]
        raise DataError(path, None, None, f"{fmt} files import into {' or '.join(takers) or 'no'} projects only "
                                          f"(this one is {task.name})")
    if fmt == "paircase":
        items = _read_paircase(path, on_row)
    elif fmt == "benchmark":
        items = _read_benchmark(path, on_row)
    elif fmt == "pipeline":
        items = _read_pipeline(path, task, on_row)
        _check_splits(path, items)
    else:
        items = _read_items(path, task, on_row)
        _check_splits(path, items)  # a no-op for task types whose items carry no split
    seen: dict[str, int] = {}
    for it in items:
        if it.ext_id in seen:
            raise DataError(path, it.line, "id", f"duplicate id {it.ext_id!r} (first on line {seen[it.ext_id]})")
        seen[it.ext_id] = it.line
        if len(it.ext_id) > MAX_ID_CHARS:
            raise DataError(path, it.line, "id", f"{len(it.ext_id)} characters long; at most {MAX_ID_CHARS}")
        if (problem := id_problem(it.ext_id)) is not None:
            raise DataError(path, it.line, "id", problem)
        for value in (it.payload, it.gold):
            if nesting_depth(value) > MAX_DEPTH:
                raise DataError(path, it.line, None, f"nested deeper than {MAX_DEPTH} levels of objects and lists")
        try:
            orjson.dumps(it.payload)  # the payload must survive the JSON column unchanged
        except orjson.JSONEncodeError as exc:
            raise DataError(path, it.line, None, f"not storable as JSON: {exc}") from None
    if not items:
        raise DataError(path, None, None, "file has no rows")
    return fmt, items
