"""Potato: a project (config.yaml + data/units.jsonl) per task type, and its per-annotator output files
(`annotation_output/USER/annotated_instances.jsonl`) back into the long format.

Potato's output row is `{"id", "displayed_text", "label_annotations": {scheme: {label: value}}, ...}`: a radio
scheme stores the chosen label as the key, a likert scheme `scale_N`. The output does not repeat the data, so
the import reads the project's data file (named by its config) for each instance's unit (`tb_swap`).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import yaml

from tailorbench.agreement.records import RatingSet
from tailorbench.annotation.tasks import JUDGMENTS, SCALE
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.interop.units import Collector, ImportReport, Unit, unit_from_meta

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
    """The Potato project config of a task type."""
    return {"annotation_task_name": f"{name} ({task})", "output_annotation_dir": f"{OUTPUT_DIR}/",
            "output_annotation_format": "jsonl", "data_files": [DATA_FILE],
            "item_properties": {"id_key": "id", "text_key": "text"},
            "user_config": {"allow_all_users": True, "users": []}, "annotation_schemes": _schemes(task),
            "html_layout": "default", "base_html_template": "default", "header_file": "default",
            "site_dir": "default", "port": 8000, "alert_time_each_instance": 10000000}


def _text(unit: Unit) -> str:
    """What the annotator reads: each field under its title, escaped (Potato shows the text as HTML)."""
    parts = [f"<b>{_FIELD_TITLES.get(k, k)}</b><br>{html.escape(v).replace(chr(10), '<br>')}"
             for k, v in unit.fields.items() if v]
    return "<br><br>".join(parts)


def export(units: list[Unit], out: Path) -> list[Path]:
    """Write `config.yaml` and `data/units.jsonl` (one instance per unit, carrying the unit)."""
    (out / DATA_FILE).parent.mkdir(parents=True, exist_ok=True)
    with (out / DATA_FILE).open("w", encoding="utf-8") as handle:
        for unit in units:
            handle.write(json.dumps({"id": unit.uid, "text": _text(unit), **unit.meta()}, ensure_ascii=False) + "\n")
    task = units[0].task if units else "pairwise"
    (out / CONFIG_FILE).write_text(yaml.safe_dump(project_config(task), sort_keys=False, allow_unicode=True),
                                   encoding="utf-8")
    return [out / CONFIG_FILE, out / DATA_FILE]


def _answer(labels: dict[str, Any]) -> dict[str, Any] | str:
    """Potato's `label_annotations` -> a side-based answer, or why it is not one."""
    answer: dict[str, Any] = {}
    for scheme, chosen in labels.items():
        if not isinstance(chosen, dict) or len(chosen) != 1:
            return f"scheme {scheme!r} must hold exactly one label, got {chosen!r}"
        ((label, _value),) = chosen.items()
        scale = re.fullmatch(r"scale_(\d+)", str(label))
        if scale:
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
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataError(config_path, None, None, f"not readable YAML: {exc}") from None
    if not isinstance(config, dict) or not config.get("data_files"):
        raise DataError(config_path, None, "data_files", "a Potato config names its data_files")
    return config_path.parent, config


def read_export(path: str | Path) -> tuple[RatingSet, ImportReport]:
    """A Potato project folder (its config, data files and every annotator's annotated_instances.jsonl) ->
    long-format ratings (rater = the annotator's folder name) and the counts."""
    root, config = _project(Path(path))
    id_key = (config.get("item_properties") or {}).get("id_key", "id")
    units: dict[str, Unit | str] = {}
    for name in config["data_files"]:
        for _, row in read_jsonl(root / name, InvalidRows()):
            units[str(row.get(id_key))] = unit_from_meta(row)
    col = Collector("potato")
    outputs = sorted((root / str(config.get("output_annotation_dir") or OUTPUT_DIR)).glob(
        "*/annotated_instances.jsonl"))
    if not outputs:
        raise DataError(root, None, None, "no annotator output (annotation_output/USER/annotated_instances.jsonl)")
    for out in outputs:
        col.source(out)
        rater = out.parent.name
        for line, row in read_jsonl(out, InvalidRows()):
            uid = str(row.get("id"))
            if uid not in units:
                col.unmappable(out, line, f"instance {uid!r} is not in the project's data files")
                continue
            labels = row.get("label_annotations")
            if not labels:
                col.count("empty")
                continue
            answer = _answer(labels) if isinstance(labels, dict) else "label_annotations is not an object"
            if isinstance(answer, str):
                col.unmappable(out, line, answer)
                continue
            col.answer(units[uid], rater, answer, out, line)
    return col.ratings, col.report


def looks_like(path: Path) -> bool:
    """A folder (or config file) of a Potato project: a YAML config with `annotation_schemes`."""
    config = path / CONFIG_FILE if path.is_dir() else path
    if not config.is_file() or config.suffix.lower() not in (".yaml", ".yml"):
        return False
    return "annotation_schemes" in config.read_text(encoding="utf-8", errors="replace")
