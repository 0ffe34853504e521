"""Label Studio: tailorbench items as Label Studio tasks with a labeling config (XML) per task type, judge
verdicts optionally attached as `predictions`, and Label Studio's JSON export back into the long format.

The config's controls: pairwise `<Pairwise name="choice">` over the two answers (its result is
`{"type": "pairwise", "value": {"selected": "left"|"right"}}`) with the confidence as `<Rating name="confidence"
maxRating="3">`; attributes and relevance `<Choices name="judgment"|"relevant">`; A/B rating `<Rating name="score"
maxRating="5">` (answer 2 against answer 1). Each task's `data` carries the unit (`tb_unit`, `tb_task`,
`tb_swap`), so the import needs only the export. `Pairwise` has no tie: a config that adds a choice named like a
tie (`TIE_WORDS`) maps it to an abstention, counted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from tailorbench.agreement.records import Label, RatingSet
from tailorbench.annotation.tasks import JUDGMENTS, SCALE
from tailorbench.files import field_of, load_json, write_text_atomic
from tailorbench.interop.mapping import FieldMap, Shape, add_answer, finish, item_id, rater_of
from tailorbench.interop.units import (
    REF,
    TIE_WORDS,
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

TASKS_FILE = "tasks.json"
CONFIG_FILE = "config.xml"


def _text(name: str, header: str) -> str:
    return f'  <Header value={quoteattr(header)}/>\n  <Text name="{name}" value="${name}"/>\n'


def labeling_config(task: str) -> str:
    """The labeling config (XML) of a task type; the names of its controls are what `read_export` reads."""
    body = ""
    if task in ("pairwise", "ab_rating"):
        body += _text("persona", "The person")
    if task == "pairwise":
        body += _text("question", "Question")
        body += _text("answer1", "Answer 1") + _text("answer2", "Answer 2")
        body += ('  <Header value="Which answer fits this person better?"/>\n'
                 '  <Pairwise name="choice" toName="answer1,answer2"/>\n'
                 '  <Header value="How confident are you? (1 = not very, 3 = very)"/>\n'
                 '  <Rating name="confidence" toName="answer1" maxRating="3"/>\n')
    elif task == "attributes":
        body += _text("conversation", "Conversation") + _text("attribute", "Inferred attribute")
        choices = "".join(f'    <Choice value="{j}"/>\n' for j in JUDGMENTS)
        body += ('  <Header value="Is the attribute supported by the conversation?"/>\n'
                 f'  <Choices name="judgment" toName="attribute" choice="single" required="true">\n{choices}'
                 '  </Choices>\n')
    elif task == "relevance":
        body += _text("prompt", "Prompt") + _text("attribute", "Attribute of the user")
        body += ('  <Header value="Should this attribute change the response to the prompt?"/>\n'
                 '  <Choices name="relevant" toName="attribute" choice="single" required="true">\n'
                 '    <Choice value="yes"/>\n    <Choice value="no"/>\n  </Choices>\n')
    else:
        body += _text("prompt", "Prompt") + _text("answer1", "Answer 1") + _text("answer2", "Answer 2")
        body += _text("attribute", "Attribute")
        scale = ", ".join(f"{n} = {text}" for n, text in SCALE)
        body += (f'  <Header value={quoteattr("Answer 2 compared with answer 1 for this attribute: " + scale)}/>\n'
                 '  <Rating name="score" toName="answer2" maxRating="5" required="true"/>\n')
    return f"<View>\n{body}</View>\n"


def _result(unit: Unit, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """A side-based answer as Label Studio result objects (what the config's controls store)."""
    if unit.task == "pairwise":
        return [{"from_name": "choice", "to_name": "choice", "type": "pairwise",
                 "value": {"selected": answer["side"]}}]
    if unit.task == "ab_rating":
        return [{"from_name": "score", "to_name": "answer2", "type": "rating", "value": {"rating": answer["score"]}}]
    name = "judgment" if unit.task == "attributes" else "relevant"
    return [{"from_name": name, "to_name": "attribute", "type": "choices",
             "value": {"choices": [answer[name]]}}]


def export(units: list[Unit], out: Path, verdicts: dict[str, list[tuple[str, Label]]] | None = None) -> list[Path]:
    """Write `tasks.json` (Label Studio's import format, one task per unit) and `config.xml`."""
    tasks = []
    references = refs(units)
    for unit, ref in zip(units, references):
        task: dict[str, Any] = {"data": {**unit.fields, REF: ref}}
        preds = (verdicts or {}).get(unit.uid, [])
        if preds:
            task["predictions"] = [{"model_version": judge,
                                    "result": _result(unit, shown_answer(unit, prediction_label(unit, label)))}
                                   for judge, label in preds]
        tasks.append(task)
    write_text_atomic(out / TASKS_FILE, json.dumps(tasks, ensure_ascii=False, indent=1) + "\n")
    write_text_atomic(out / CONFIG_FILE, labeling_config(units[0].task if units else "pairwise"))
    return [out / TASKS_FILE, out / CONFIG_FILE, write_key(out, units, references)]


def _rater(completed_by: Any) -> str:
    """`completed_by` is a user id, or (some exports) the user object."""
    if isinstance(completed_by, dict):
        return str(completed_by.get("email") or completed_by.get("id") or "")
    if completed_by is None or isinstance(completed_by, bool):
        return ""
    return str(completed_by)


def _answer(result: list[Any]) -> dict[str, Any] | str:
    """A Label Studio result list -> a side-based answer, or why it is not one."""
    answer: dict[str, Any] = {}
    tie: str | None = None
    for r in result:
        if not isinstance(r, dict) or not isinstance(r.get("value"), dict):
            return "a result entry is not an object with a 'value'"
        kind, name, value = r.get("type"), r.get("from_name"), r["value"]
        if kind == "pairwise":
            answer["side"] = value.get("selected")
        elif kind == "rating":
            answer["confidence" if name == "confidence" else "score"] = value.get("rating")
        elif kind == "choices":
            chosen = value.get("choices")
            if not isinstance(chosen, list) or len(chosen) != 1:
                return f"choices of {name!r} must hold exactly one choice, got {chosen!r}"
            if str(chosen[0]).strip().lower() in TIE_WORDS:
                tie = str(chosen[0])
            else:
                answer[str(name)] = chosen[0]
    if tie is not None:
        if "side" in answer:
            return f"both a side ({answer['side']!r}) and a tie ({tie!r}) chosen"
        answer["side"] = tie
    return answer


def _foreign_answers(result: list[Any]) -> dict[str, tuple[str, Any]]:
    """A foreign task's result list -> question (control name) -> (kind, value) of the controls a rating can
    come from: Pairwise `selected`, Choices `choices`, Rating `rating`, Number `number`."""
    out: dict[str, tuple[str, Any]] = {}
    for r in result:
        if not isinstance(r, dict) or not isinstance(r.get("value"), dict):
            continue
        kind = str(r.get("type"))
        key = {"pairwise": "selected", "choices": "choices", "rating": "rating", "number": "number"}.get(kind)
        if key is not None and key in r["value"]:
            out[str(r.get("from_name"))] = (kind, r["value"][key])
    return out


def read_export(path: str | Path, fmap: FieldMap | None = None, key: UnitKey | None = None
                ) -> tuple[RatingSet, ImportReport]:
    """Label Studio's JSON export (a list of tasks with `annotations`, `drafts`) -> long-format ratings and the
    counts: cancelled (skipped) annotations, drafts, empty results, ties and unmappable ones kept apart. Line
    numbers in the report are the tasks' positions (1-based) in the export. Tasks tailorbench did not export
    (no `tb_ref`, nor an older export's `tb_unit`), or any task when a mapping is given, are read through the
    mapping (`mapping.py`); a task's reference is looked up in `key`, by default the project's key file found
    beside the export or above it (`units.find_key`)."""
    path = Path(path)
    tasks = load_json(path, list, "a Label Studio JSON export (a list of tasks)")
    col = Collector("label-studio")
    col.source(path)
    shape = Shape(item=fmap.item if fmap and fmap.item else "id",
                  rater=fmap.rater if fmap and fmap.rater else "completed_by")
    foreign = 0
    key = key if key is not None else find_key(path)
    for pos, task in enumerate(tasks, start=1):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            col.unmappable(path, pos, "task is not an object with 'data'")
            continue
        own = fmap is None and is_own(task["data"])
        foreign += not own
        unit = unit_from_meta(task["data"], key) if own else None
        where = f"[{pos}]."  # the task's position in the export, as the report counts them
        for _ in field_of(task, "drafts", list, "a list of drafts", path, None, where, ()):
            col.count("draft")
        for ann in field_of(task, "annotations", list, "a list of annotations", path, None, where, ()):
            if not isinstance(ann, dict):
                col.unmappable(path, pos, "annotation is not an object")
                continue
            if ann.get("was_cancelled"):
                col.count("cancelled (skipped)")
                continue
            if not ann.get("result"):
                col.count("empty")
                continue
            if isinstance(ann.get("lead_time"), int | float):
                col.report.lead_time_s.append(float(ann["lead_time"]))
            if not isinstance(ann["result"], list):
                col.unmappable(path, pos, f"task {task.get('id', pos)}: result is not a list")
            elif unit is None:
                add_answer(col, shape, task, _foreign_answers(ann["result"]), item_id(task, fmap, "id"),
                           rater_of(ann, fmap, "completed_by"), fmap, (path, pos))
            else:
                answer = _answer(ann["result"])
                if isinstance(answer, str):
                    col.unmappable(path, pos, f"task {task.get('id', pos)}: {answer}")
                    continue
                col.answer(unit, _rater(ann.get("completed_by")), answer, path, pos)
    if foreign:
        finish(col, shape, fmap)
    return col.ratings, col.report


def looks_like(path: Path) -> bool:
    """A `.json` file whose first task has `data` and `annotations` (cheap: reads the start of the file)."""
    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    with path.open(encoding="utf-8", errors="replace") as handle:
        head = handle.read(65536)
    return head.lstrip().startswith("[") and '"annotations"' in head and '"data"' in head
