"""Argilla (v2): dataset settings (fields, questions, metadata, `TaskDistribution(min_submitted=N)`) and records
from tailorbench units, in the JSON the `argilla` SDK itself reads (`rg.Settings.from_json`, `Record.from_dict`);
responses back into the long format, with submitted, discarded and draft responses kept apart.

Records read back: the nested records of `Dataset.to_disk` / `records.to_json` (`responses: {question: [{value,
user_id[, status]}]}`; to_disk leaves the status out, so those responses are read as submitted and the report
says so), or flattened rows (`records.to_list(flatten=True)`, what `to_hub` publishes: `Q.responses`,
`Q.responses.users`, `Q.responses.status`) as a JSON list or JSONL. A record's metadata carries only an opaque
reference (`tb_ref`; Argilla sends metadata to the annotator's browser even when it hides it from view), and the
unit it stands for is in the export's key file (`tailorbench-key.json`), which the import reads; records of
older exports carry the unit itself (`tb_unit`, `tb_task`, `tb_swap`) and are read as before.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tailorbench.agreement.records import Label, RatingSet
from tailorbench.annotation.tasks import JUDGMENTS, SCALE
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import load_bytes, parse_json, type_name, write_text_atomic
from tailorbench.interop.mapping import FieldMap, Shape, add_answer, finish, item_id
from tailorbench.interop.units import (
    REF,
    Collector,
    ImportReport,
    Unit,
    UnitKey,
    find_key,
    is_own,
    prediction_label,
    refs,
    shown_answer,
    unit_from_meta,
    write_key,
)

SETTINGS_FILE = "settings.json"
RECORDS_FILE = "records.json"
#: metadata of every record: an opaque reference to its unit (the unit itself is in the key file)
META = (REF,)
#: what records of older exports carried instead
LEGACY_META = ("tb_unit", "tb_item", "tb_task", "tb_swap")


def _entry(name: str, kind: str, settings: dict[str, Any], title: str, required: bool) -> dict[str, Any]:
    return {"id": None, "inserted_at": None, "updated_at": None, "name": name, "settings": settings,
            "title": title, "description": None, "required": required, "dataset_id": None, "type": kind}


def _text_field(name: str, title: str, required: bool = True) -> dict[str, Any]:
    """A text field; the SDK serializes a field's `required` before its `description` (a question's after)."""
    entry = _entry(name, "text", {"type": "text", "use_markdown": False}, title, required)
    return {k: entry[k] for k in ("id", "inserted_at", "updated_at", "name", "settings", "title", "required",
                                  "description", "dataset_id", "type")}


def _label(name: str, options: dict[str, str], title: str) -> dict[str, Any]:
    settings = {"type": "label_selection", "options": [{"text": t, "value": v} for v, t in options.items()],
                "visible_options": None}
    return _entry(name, "label_selection", settings, title, True)


def _rating(name: str, values: range, title: str, required: bool) -> dict[str, Any]:
    return _entry(name, "rating", {"type": "rating", "options": [{"value": v} for v in values]}, title, required)


def settings(task: str, min_submitted: int, guidelines: str | None = None) -> dict[str, Any]:
    """`rg.Settings(...).serialize()` of a task type's dataset (what `Settings.to_json` writes)."""
    fields = []
    if task in ("pairwise", "ab_rating"):
        fields.append(_text_field("persona", "The person", required=False))
    if task == "pairwise":
        fields += [_text_field("question", "Question"), _text_field("answer1", "Answer 1"),
                   _text_field("answer2", "Answer 2")]
        questions = [_label("choice", {"left": "Answer 1", "right": "Answer 2"},
                            "Which answer fits this person better?"),
                     _rating("confidence", range(1, 4), "How confident are you? (1 = not very, 3 = very)", False)]
    elif task == "attributes":
        fields += [_text_field("conversation", "Conversation"), _text_field("attribute", "Inferred attribute")]
        questions = [_label("judgment", {j: j for j in JUDGMENTS}, "Is the attribute supported by the conversation?")]
    elif task == "relevance":
        fields += [_text_field("prompt", "Prompt"), _text_field("attribute", "Attribute of the user")]
        questions = [_label("relevant", {"yes": "yes", "no": "no"},
                            "Should this attribute change the response to the prompt?")]
    else:
        fields += [_text_field("prompt", "Prompt"), _text_field("answer1", "Answer 1"),
                   _text_field("answer2", "Answer 2"), _text_field("attribute", "Attribute")]
        scale = ", ".join(f"{n} = {text}" for n, text in SCALE)
        questions = [_rating("score", range(1, 6), f"Answer 2 compared with answer 1 for this attribute: {scale}",
                             True)]
    metadata = [{"id": None, "inserted_at": None, "updated_at": None, "name": name,
                 "settings": {"visible_for_annotators": False, "type": "terms", "values": None}, "title": name,
                 "visible_for_annotators": False, "dataset_id": None} for name in META]
    return {"guidelines": guidelines, "questions": questions, "fields": fields, "vectors": [], "metadata": metadata,
            "allow_extra_metadata": False, "distribution": {"strategy": "overlap", "min_submitted": min_submitted},
            "mapping": None}


def _suggestion(unit: Unit, verdicts: list[tuple[str, Label]]) -> dict[str, Any]:
    """Argilla holds one suggestion per question: the verdicts' most common answer (the first on a tie), its
    `score` the share of the unit's verdicts that gave it (a judge's two answer orders disagreeing show as 0.5),
    `agent` every judge that gave a verdict, so no verdict of a pair is lost from view."""
    name = {"pairwise": "choice", "attributes": "judgment", "relevance": "relevant", "ab_rating": "score"}[unit.task]
    key = {"choice": "side", "score": "score"}.get(name, name)
    values = [shown_answer(unit, prediction_label(unit, label)).get(key) for _, label in verdicts]
    value = max(values, key=values.count)  # max keeps the first of equal counts
    agents = list(dict.fromkeys(judge for judge, _ in verdicts))
    return {name: {"value": value, "score": round(values.count(value) / len(values), 4), "agent": ", ".join(agents)}}


def export(units: list[Unit], out: Path, min_submitted: int,
           verdicts: dict[str, list[tuple[str, Label]]] | None = None) -> list[Path]:
    """Write `settings.json` and `records.json` (a record per unit, its judge verdicts as one suggestion)."""
    records = []
    references = refs(units)
    for unit, ref in zip(units, references):
        preds = (verdicts or {}).get(unit.uid, [])
        records.append({"id": ref, "fields": {k: v for k, v in unit.fields.items() if v},
                        "metadata": {REF: ref}, "suggestions": _suggestion(unit, preds) if preds else {},
                        "responses": {}, "vectors": {}, "status": "pending"})
    task = units[0].task if units else "pairwise"
    # byte for byte what `Settings.to_json` writes (json.dumps with its defaults, no newline at the end)
    write_text_atomic(out / SETTINGS_FILE, json.dumps(settings(task, min_submitted)))
    write_text_atomic(out / RECORDS_FILE, json.dumps(records, ensure_ascii=False, indent=1) + "\n")
    return [out / SETTINGS_FILE, out / RECORDS_FILE, write_key(out, units, references)]


_QUESTION_KEY = {"choice": "side", "confidence": "confidence", "judgment": "judgment", "relevant": "relevant",
                 "score": "score"}


def _responses(record: dict[str, Any], where: tuple[str | Path, int]) -> dict[str, list[tuple[str, Any, str | None]]]:
    """user -> [(question, value, status or None)] of a nested or flattened record."""
    by_user: dict[str, list[tuple[str, Any, str | None]]] = defaultdict(list)
    nested = record.get("responses")
    if nested is not None and not isinstance(nested, dict):
        raise DataError(where[0], where[1], "responses", f"expected an object (question -> responses), got "
                        f"{type_name(nested)}")
    if isinstance(nested, dict):
        for question, answers in nested.items():
            if answers is not None and not isinstance(answers, list):
                raise DataError(where[0], where[1], f"responses.{question}", "expected a list of responses, got "
                                f"{type_name(answers)}")
            for a in answers or []:
                if isinstance(a, dict):
                    by_user[str(a.get("user_id") or "")].append(
                        (question, a.get("value"), _status(a.get("status"), f"responses.{question}.status", where)))
        return by_user
    for key, values in record.items():
        if not key.endswith(".responses") or values is None:
            continue
        question = key[: -len(".responses")]
        values = _column(record, key, None, len(values) if isinstance(values, list) else 0, where)
        users = _column(record, f"{key}.users", "", len(values), where)
        statuses = _column(record, f"{key}.status", None, len(values), where)
        for value, user, status in zip(values, users, statuses, strict=True):
            by_user[str(user or "")].append((question, value, _status(status, f"{key}.status", where)))
    return by_user


def _status(status: Any, field: str, where: tuple[str | Path, int]) -> str | None:
    """A response's status: text (submitted, discarded, draft) or absent; anything else names the field."""
    if status is None or isinstance(status, str):
        return status
    raise DataError(where[0], where[1], field, f"a response status is text, got {type_name(status)}")


def _column(record: dict[str, Any], key: str, missing: Any, n: int, where: tuple[str | Path, int]) -> list[Any]:
    """A flattened record's `Q.responses` (or its `.users`, `.status`): a list with one entry per response
    (absent: `missing` for each); another type, or another length, is a DataError naming the column."""
    value = record.get(key)
    if value is None:
        return [missing] * n
    if not isinstance(value, list):
        raise DataError(where[0], where[1], key, f"expected a list (one entry per response), got {type_name(value)}")
    if key.endswith(".responses"):
        return value
    if len(value) != n:
        raise DataError(where[0], where[1], key, f"holds {len(value)} entries for {n} responses")
    return value


def _unit(record: dict[str, Any], key: UnitKey | None) -> Unit | str:
    nested = record.get("metadata")
    meta: dict[str, Any] = nested if isinstance(nested, dict) else record
    if REF in meta:
        return unit_from_meta({REF: meta[REF]}, key)
    values = {k: meta.get(k) for k in LEGACY_META}
    if isinstance(values["tb_swap"], str):
        values["tb_swap"] = {"true": True, "false": False}.get(values["tb_swap"].lower(), values["tb_swap"])
    return unit_from_meta(values)


def _parquet_rows(paths: list[Path]) -> list[tuple[int, Any]]:
    """The rows of `to_hub`'s parquet files (the flattened records), numbered across the files."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise DataError(paths[0], None, None, "reading parquet files needs pyarrow (pip install pyarrow)") from None
    rows: list[Any] = []
    for part in paths:
        rows.extend(pq.read_table(part).to_pylist())
    return list(enumerate(rows, start=1))


def _records(path: Path) -> list[tuple[int, Any]]:
    """(position or line, record) of a records file: a JSON list, JSONL, parquet (to_hub), or a folder holding
    records.json (to_disk) or parquet files (a downloaded hub dataset)."""
    if path.is_dir():
        parquet = sorted(path.rglob("*.parquet"))
        if not (path / RECORDS_FILE).is_file() and parquet:
            return _parquet_rows(parquet)
        path = path / RECORDS_FILE
    if not path.is_file():
        raise DataError(path, None, None, "no such file (an Argilla export is records.json, records as JSONL or "
                                          "parquet, or a to_disk or hub folder)")
    if path.suffix.lower() == ".parquet":
        return _parquet_rows([path])
    data = load_bytes(path, "Argilla records")
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head == b"[":
        return list(enumerate(parse_json(data, path, None, list, "a list of records"), start=1))
    if head == b"{":
        try:
            whole = parse_json(data, path)
        except DataError:
            whole = None  # JSONL: several documents
        if isinstance(whole, dict) and not any(k == "responses" or k.endswith(".responses") for k in whole):
            keys = ", ".join(map(repr, list(whole)[:5]))
            raise DataError(path, None, None, f"one JSON object ({keys}), not Argilla records: records.json is a "
                            "list of records (Dataset.to_disk, records.to_json), JSONL one record a line")
    return list(read_jsonl(path, InvalidRows()))


def read_export(path: str | Path, fmap: FieldMap | None = None, key: UnitKey | None = None
                ) -> tuple[RatingSet, ImportReport]:
    """Argilla records (nested or flattened) -> long-format ratings and the counts: discarded and draft responses,
    responses without a value, and unmappable ones kept apart. Lines are JSONL lines or positions in a list.
    Records tailorbench did not export (no `tb_unit` metadata), or any when `fmap` is given, go through the
    mapping: item = the record's `id` unless mapped, rater = the response's user, label = the answer's value."""
    path = Path(path)
    return _read(_records(path), path, fmap, key if key is not None else find_key(path))


def read_records(records: Iterable[Any], source: str = "argilla-sdk", fmap: FieldMap | None = None,
                 key: UnitKey | str | Path | None = None) -> tuple[RatingSet, ImportReport]:
    """`read_export` of records in memory, straight from the SDK: `dataset.records.to_list(flatten=True)` (or
    nested dicts); lines in the report are their positions, `source` their name; `key` the export's key file
    (or a folder holding it; read with `units.read_key`/`find_key`)."""
    if isinstance(key, str | Path):
        key = find_key(Path(key))
    return _read(enumerate(records, start=1), source, fmap, key)


def _own(record: dict[str, Any], fmap: FieldMap | None) -> bool:
    meta = record.get("metadata")
    return fmap is None and is_own(meta if isinstance(meta, dict) else record)


def _read(numbered: Iterable[tuple[int, Any]], source: str | Path, fmap: FieldMap | None,
          key: UnitKey | None = None) -> tuple[RatingSet, ImportReport]:
    col = Collector("argilla")
    col.source(source)
    shape = Shape(item=fmap.item if fmap and fmap.item else "id", rater="responses[].user_id")
    no_status = foreign = 0
    for line, record in numbered:
        if not isinstance(record, dict):
            col.unmappable(source, line, "record is not an object")
            continue
        own = _own(record, fmap)
        foreign += not own
        unit = _unit(record, key) if own else None
        for user, answers in _responses(record, (source, line)).items():
            statuses = {s for _, _, s in answers}
            if "discarded" in statuses:
                col.count("discarded")
                continue
            if "draft" in statuses:
                col.count("draft")
                continue
            no_status += None in statuses
            if unit is None:
                given = {q: ("label", v) for q, v, _ in answers if v is not None}
                add_answer(col, shape, record, given, item_id(record, fmap, "id"), user, fmap, (source, line))
                continue
            answer = {_QUESTION_KEY.get(q, q): v for q, v, _ in answers if v is not None}
            if not answer:
                col.count("empty")
                continue
            col.answer(unit, user, answer, source, line)
    if no_status:
        col.report.notes.append(f"{no_status} annotators' responses carry no status (Dataset.to_disk leaves it "
                                "out): read as submitted")
    if foreign:
        finish(col, shape, fmap)
    return col.ratings, col.report


def looks_like(path: Path) -> bool:
    """A to_disk or hub folder (`.argilla/` or settings.json beside records.json or parquet files), a parquet
    file with `Q.responses` columns, or a records file whose start has Argilla's keys."""
    if path.is_dir():
        config = (path / ".argilla").is_dir() or (path / SETTINGS_FILE).is_file()
        return config and ((path / RECORDS_FILE).is_file() or any(path.rglob("*.parquet")))
    suffix = path.suffix.lower()
    if not path.is_file() or suffix not in (".json", ".jsonl", ".parquet"):
        return False
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            return False
        return any(name.endswith(".responses") for name in pq.read_schema(path).names)
    with path.open(encoding="utf-8", errors="replace") as handle:
        head = handle.read(65536)
    return ('"responses"' in head or '.responses"' in head) and '"annotations"' not in head
