"""Potato: a project (config.yaml + data/units.jsonl) per task type, and its per-annotator output files
(`annotation_output/USER/annotated_instances.jsonl`) back into the long format.

Potato's output row is `{"id", "displayed_text", "label_annotations": {scheme: {label: value}}, ...}`: a radio
scheme stores the chosen label as the key, a likert scheme `scale_N`. The output does not repeat the data, so
the import reads the project's data file (named by its config) for each instance's reference (`tb_ref`, also its
id) and the project's key file (`tailorbench-key.json`, beside the config) for the unit it stands for: nothing
the Potato server sends an annotator says which answer is which.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import yaml

from tailorbench.agreement.records import RatingSet
from tailorbench.annotation.tasks import JUDGMENTS, SCALE
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import (
    field_of,
    load_bytes,
    load_json,
    load_yaml,
    type_name,
    write_jsonl_atomic,
    write_text_atomic,
)
from tailorbench.interop.mapping import FieldMap, Shape, add_answer, finish, item_id
from tailorbench.interop.units import (
    REF,
    Collector,
    ImportReport,
    Unit,
    UnitKey,
    find_key,
    is_own,
    refs,
    unit_from_meta,
    write_key,
)

CONFIG_FILE = "config.yaml"
DATA_FILE = "data/units.jsonl"
OUTPUT_DIR = "annotation_output"
#: radio labels of the pairwise choice -> side
SIDES = {"Answer 1": "left", "Answer 2": "right"}
_FIELD_TITLES = {"persona": "The person", "question": "Question", "prompt": "Prompt", "conversation": "Conversation",
                 "answer1": "Answer 1", "answer2": "Answer 2", "attribute": "Attribute"}


def _schemes(task: str) -> list[dict[str, Any]]:
    if task == "pairwise":
        return [{"annotation_type": "radio", "name": "choice", "description": "Which answer fits this person better?",
                 "labels": list(SIDES)},
                {"annotation_type": "likert", "name": "confidence", "description": "How confident are you?",
                 "min_label": "not very", "max_label": "very", "size": 3}]
    if task == "attributes":
        return [{"annotation_type": "radio", "name": "judgment",
                 "description": "Is the attribute supported by the conversation?", "labels": list(JUDGMENTS)}]
    if task == "relevance":
        return [{"annotation_type": "radio", "name": "relevant",
                 "description": "Should this attribute change the response to the prompt?", "labels": ["yes", "no"]}]
    return [{"annotation_type": "likert", "name": "score", "description": "Answer 2 compared with answer 1 for this "
             "attribute", "min_label": SCALE[0][1], "max_label": SCALE[-1][1], "size": len(SCALE)}]


def project_config(task: str, name: str = "tailorbench") -> dict[str, Any]:
    """The Potato project config of a task type, in Potato 2's schema (`potato validate --strict` passes on
    2.12): `export_annotation_format` (the key that replaced `output_annotation_format`) and no v1 layout keys;
    served on loopback unless the team edits `host`."""
    return {"annotation_task_name": f"{name} ({task})", "output_annotation_dir": f"{OUTPUT_DIR}/",
            "export_annotation_format": "jsonl", "data_files": [DATA_FILE],
            "item_properties": {"id_key": "id", "text_key": "text"},
            "user_config": {"allow_all_users": True, "users": []}, "annotation_schemes": _schemes(task),
            "host": "127.0.0.1", "port": 8000, "alert_time_each_instance": 10000000}


def _text(unit: Unit) -> str:
    """What the annotator reads: each field under its title, escaped (Potato shows the text as HTML)."""
    parts = [f"<b>{_FIELD_TITLES.get(k, k)}</b><br>{html.escape(v).replace(chr(10), '<br>')}"
             for k, v in unit.fields.items() if v]
    return "<br><br>".join(parts)


def export(units: list[Unit], out: Path) -> list[Path]:
    """Write `config.yaml`, `data/units.jsonl` (one instance per unit, its id an opaque reference) and the key
    file mapping each reference to its unit."""
    references = refs(units)
    write_jsonl_atomic(out / DATA_FILE, ({"id": ref, "text": _text(unit), REF: ref}
                                         for unit, ref in zip(units, references)))
    task = units[0].task if units else "pairwise"
    write_text_atomic(out / CONFIG_FILE, yaml.safe_dump(project_config(task), sort_keys=False, allow_unicode=True))
    return [out / CONFIG_FILE, out / DATA_FILE, write_key(out, units, references)]


def _answer(labels: dict[str, Any]) -> dict[str, Any] | str:
    """Potato's `label_annotations` -> a side-based answer, or why it is not one."""
    answer: dict[str, Any] = {}
    for scheme, chosen in labels.items():
        if not isinstance(chosen, dict) or len(chosen) != 1:
            return f"scheme {scheme!r} must hold exactly one label, got {chosen!r}"
        ((label, _value),) = chosen.items()
        scale = re.fullmatch(r"(?:scale_)?(\d+)", str(label))  # likert: Potato 1 `scale_N`, Potato 2 `N`
        if scale and scheme != "choice":
            answer[scheme] = int(scale.group(1))
        elif scheme == "choice":
            answer["side"] = SIDES.get(label, label)
        else:
            answer[scheme] = label
    return answer


def _project(path: Path) -> tuple[Path, dict[str, Any]]:
    config_path = path / CONFIG_FILE if path.is_dir() else path
    if not config_path.is_file():
        raise DataError(config_path, None, None, "no Potato config (give the project folder or its config.yaml)")
    config = load_yaml(config_path, dict, "a Potato config (a YAML mapping)")
    files = config.get("data_files")
    if isinstance(files, str):
        files = config["data_files"] = [files]
    if not files or not isinstance(files, list) or not all(isinstance(f, str) and f.strip() for f in files):
        raise DataError(config_path, None, "data_files", "a Potato config names its data_files (a list of paths), "
                        f"got {files!r:.80}")
    props = field_of(config, "item_properties", dict, "a mapping (id_key, text_key)", config_path, default={})
    if not isinstance(props.get("id_key", "id"), str):
        raise DataError(config_path, None, "item_properties.id_key", "expected the name of the id field, got "
                        f"{type_name(props['id_key'])}")
    out_dir = field_of(config, "output_annotation_dir", str, "a folder name", config_path)
    schemes = config.get("annotation_schemes")
    if not isinstance(schemes, list) or not schemes:
        raise DataError(config_path, None, "annotation_schemes", "a Potato config lists its annotation_schemes (what "
                        f"annotators answer), got {'nothing' if schemes is None else type_name(schemes)}")
    for pos, scheme in enumerate(schemes):
        _check_scheme(config_path, f"annotation_schemes.{pos}", scheme)
    for key, value in [*(("data_files", f) for f in files), ("output_annotation_dir", out_dir or "")]:
        if "\x00" in value:
            raise DataError(config_path, None, key, f"{value!r} holds a NUL byte: not a path")
    return config_path.parent, config


#: the annotation types the import reads (a radio answer is its label, a likert answer its number)
SCHEME_TYPES = ("radio", "likert")
#: a scheme's fields the import relies on, with their types (`name` and `annotation_type` are required)
_SCHEME_FIELDS: dict[str, tuple[type, str]] = {"name": (str, "a string"), "description": (str, "a string"),
                                               "min_label": (str, "a string"), "max_label": (str, "a string"),
                                               "size": (int, "an integer"), "labels": (list, "a list")}


def _check_scheme(path: Path, where: str, scheme: Any) -> None:
    """One of a Potato config's annotation schemes: a mapping of a type the import reads, its fields of their
    types; a DataError naming the config and the field otherwise, whichever output the labels come from."""
    if not isinstance(scheme, dict):
        raise DataError(path, None, where, f"an annotation scheme is a mapping, got {type_name(scheme)}")
    kind = scheme.get("annotation_type")
    if kind not in SCHEME_TYPES:
        raise DataError(path, None, f"{where}.annotation_type", f"the import reads {' and '.join(SCHEME_TYPES)} "
                        f"schemes, got {kind!r:.80}")
    if "name" not in scheme:
        raise DataError(path, None, f"{where}.name", "missing: a scheme names itself")
    for key, (kind_of, what) in _SCHEME_FIELDS.items():
        value = scheme.get(key)
        if value is None and key != "name":
            continue
        if not isinstance(value, kind_of) or isinstance(value, bool) or (key == "name" and not str(value).strip()):
            raise DataError(path, None, f"{where}.{key}", f"expected {what}, got {value!r:.80}")
    for pos, label in enumerate(scheme.get("labels") or []):
        named = label.get("name") if isinstance(label, dict) else label  # Potato also takes {name, tooltip}
        if not isinstance(named, str | int) or isinstance(named, bool):
            raise DataError(path, None, f"{where}.labels.{pos}", f"expected a label (a string), got {label!r:.80}")


#: one annotator's labels of one instance: (file, line, rater, instance id, {scheme: {label: value}})
Row = tuple[Path, int | None, str, str, Any]


def _v2_rows(state: Path) -> list[Row]:
    """Potato 2's `USER/user_state.json`: `instance_id_to_label_to_value` = {id: [[{schema, name}, value]]}
    (the annotator's current labels; `annotation_history.jsonl` is the log of how they got there)."""
    data = load_json(state, dict, "a Potato user state (a JSON object)")
    rater = str(data.get("user_id") or state.parent.name)
    rows: list[Row] = []
    labelled = field_of(data, "instance_id_to_label_to_value", dict, "an object (instance id -> labels)", state,
                        default={})
    for pos, (iid, pairs) in enumerate(labelled.items(), start=1):
        labels: dict[str, dict[str, Any]] = {}
        for pair in pairs if isinstance(pairs, list) else []:
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], dict):
                labels.setdefault(str(pair[0].get("schema")), {})[str(pair[0].get("name"))] = pair[1]
        rows.append((state, pos, rater, str(iid), labels))
    return rows


def _export_rows(path: Path) -> list[Row]:
    """Potato 2's periodic export `exports/jsonl/annotations.jsonl` (`instance_id`, `user_id`, `labels`)."""
    return [(path, line, str(row.get("user_id") or ""), str(row.get("instance_id")), row.get("labels"))
            for line, row in read_jsonl(path, InvalidRows())]


#: Potato 2's periodic export of every annotator's labels, under the output folder
EXPORT_FILE = "exports/jsonl/annotations.jsonl"


def _rows(root: Path, config: dict[str, Any], notes: list[str]) -> list[Row]:
    """Every annotator's rows: Potato 2's user states, else Potato 1's `USER/annotated_instances.jsonl` (rater =
    the folder name), else Potato 2's periodic export (with a note in `notes`: it may lag behind the states).
    An annotator folder of Potato 2 without its `user_state.json` (only `annotation_history.jsonl`) is an error
    naming it: that annotator's current labels are not in the folder, and reading the export or the other
    annotators instead would give fewer labels with exit 0."""
    out_dir = root / str(config.get("output_annotation_dir") or OUTPUT_DIR)
    for folder in sorted(out_dir.glob("*/annotation_history.jsonl")):
        if not (folder.parent / "user_state.json").is_file():
            raise DataError(folder.parent, None, None, "a Potato 2 annotator folder with annotation_history.jsonl "
                            "but no user_state.json (the annotator's current labels): copy the whole "
                            f"{out_dir.name}/ folder from the Potato server")
    states = sorted(out_dir.glob("*/user_state.json"))
    if states:
        return [row for state in states for row in _v2_rows(state)]
    v1 = sorted(out_dir.glob("*/annotated_instances.jsonl"))
    if v1:
        return [(out, line, out.parent.name, str(row.get("id")), row.get("label_annotations"))
                for out in v1 for line, row in read_jsonl(out, InvalidRows())]
    export = out_dir / EXPORT_FILE
    if not export.is_file():
        raise DataError(root, None, None, "no annotator output (Potato 2: annotation_output/USER/user_state.json; "
                                          "Potato 1: annotation_output/USER/annotated_instances.jsonl)")
    rows = _export_rows(export)
    notes.append(f"read Potato's periodic export {out_dir.name}/{EXPORT_FILE} ({len(rows)} annotation(s) from "
                 f"{len({r[2] for r in rows})} annotator(s)): no {out_dir.name}/USER/user_state.json here; the "
                 "export holds the labels as of its last write (every few minutes), so it may lag behind the "
                 "annotators' current labels")
    return rows


def read_export(path: str | Path, fmap: FieldMap | None = None, key: UnitKey | None = None
                ) -> tuple[RatingSet, ImportReport]:
    """A Potato project folder (its config, data files and every annotator's output, Potato 2 or 1) ->
    long-format ratings and the counts. Instances tailorbench did not export (no `tb_unit` in the data row), or
    any when `fmap` is given, go through the mapping (item = the instance id unless mapped, label = the radio
    label or the likert number)."""
    root, config = _project(Path(path))
    key = key if key is not None else find_key(root)
    id_key = (config.get("item_properties") or {}).get("id_key", "id")  # both checked by _project
    data: dict[str, dict[str, Any]] = {}
    for name in config["data_files"]:
        for _, row in read_jsonl(root / name, InvalidRows()):
            data[str(row.get(id_key))] = row
    col = Collector("potato")
    shape = Shape(item=fmap.item if fmap and fmap.item else id_key, rater="annotation_output/USER")
    foreign = 0
    for out, line, rater, uid, labels in _rows(root, config, col.report.notes):
        if str(out) not in col.report.sources:
            col.source(out)
        if uid not in data:
            col.unmappable(out, line, f"instance {uid!r} is not in the project's data files")
            continue
        if not labels:
            col.count("empty")
            continue
        answer = _answer(labels) if isinstance(labels, dict) else "label_annotations is not an object"
        if isinstance(answer, str):
            col.unmappable(out, line, answer)
        elif fmap is None and is_own(data[uid]):
            col.answer(unit_from_meta(data[uid], key), rater, answer, out, line)
        else:
            foreign += 1
            given = {("choice" if k == "side" else k): ("pairwise" if k == "side" else "label", v)
                     for k, v in answer.items()}  # the side of scheme `choice` (Answer 1 / 2) is a pairwise one
            add_answer(col, shape, data[uid], given, item_id(data[uid], fmap, id_key), rater, fmap, (out, line))
    if foreign:
        finish(col, shape, fmap)
    return col.ratings, col.report


#: keys only a Potato config has: a config naming one is read as Potato's, so its errors name its fields
_CONFIG_KEYS = ("annotation_schemes", "output_annotation_dir", "annotation_task_name")


def looks_like(path: Path) -> bool:
    """A folder (or config file) of a Potato project: a YAML config naming one of Potato's own keys, or a folder
    holding Potato's output folder (`annotation_output/`). A project whose config is broken or missing (a key
    misspelt, the file left behind) is still a Potato project: its import says what is wrong with the config
    instead of reading the folder as something else (a run directory without predictions.jsonl)."""
    if path.is_dir() and (path / OUTPUT_DIR).is_dir():
        return True
    config = path / CONFIG_FILE if path.is_dir() else path
    if not config.is_file() or config.suffix.lower() not in (".yaml", ".yml"):
        return False
    try:
        text = load_bytes(config, "a Potato config").decode("utf-8", errors="replace")
    except DataError:
        return True  # unreadable or too large: the reader says so, naming the file
    return any(key in text for key in _CONFIG_KEYS)
