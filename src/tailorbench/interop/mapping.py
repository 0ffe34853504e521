"""Reading annotation projects tailorbench did not make: which field is the item, who the rater is, which
question to read, which side shows which answer, and what a choice means.

A mapping is `--map item=data.pair_id,a=data.personalized,b=data.generic,left=data.response_left,...` (or a
YAML / JSON file of the same keys). Paths are dotted keys into the tool's task or record (`data.KEY`,
`metadata.KEY`, `fields.KEY`, `id`) and, for `rater`, into the annotation (`completed_by`,
`completed_by.email`). Without a mapping the common shapes are detected: the item is the task's or record's own
id, the rater the tool's user, the question the one answer control the rows hold (a pairwise control first).

Labels: a pairwise side (`left` / `right`) becomes `A` / `B` where the mapping names the answers (`a`, `b`: the
fields holding answer A and answer B; `left`, `right`: the fields shown on each side, by default `a` and `b`);
per task the side whose text equals answer A's is `A`. Without `a` / `b` the labels stay sides and the report
says agreement is about sides. Choices stay their values (`value.SHOWN=MEANT` renames one), ratings their
numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.agreement.records import Label
from tailorbench.errors import ConfigError, shown
from tailorbench.files import load_yaml
from tailorbench.interop.units import TIE_WORDS, Collector, Tie, Unmappable

_KEYS = ("item", "rater", "question", "a", "b", "left", "right")
SIDES = ("left", "right")
SIDES_NOTE = ("labels are the sides shown (left / right): agreement is about sides, not answers; "
              "give --map a=FIELD,b=FIELD to read them as answers A / B")


@dataclass(frozen=True)
class FieldMap:
    """Where a foreign export keeps what a rating needs; None: detect (the tool's default)."""

    item: str | None = None
    rater: str | None = None
    question: str | None = None
    a: str | None = None
    b: str | None = None
    left: str | None = None
    right: str | None = None
    #: a choice as shown -> what it means (a side, a tie word, or a label)
    values: dict[str, str] = field(default_factory=dict)

    @property
    def answers(self) -> bool:
        """Whether sides can be read as answers A / B."""
        return bool(self.a and self.b)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v}


def parse_map(spec: str | Path | None) -> FieldMap | None:
    """`--map`: `KEY=PATH,...` or a YAML / JSON file of the same keys (`values` a mapping); None: no mapping."""
    if spec is None or str(spec).strip() == "":
        return None
    text = str(spec)
    path = Path(text)
    raw: dict[str, Any]
    if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
        raw = dict(load_yaml(path, dict, f"--map: a mapping of {', '.join(_KEYS)}"))
    else:
        raw = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise ConfigError(f"option --map: {part.strip()!r} is not KEY=PATH ({', '.join(_KEYS)}, value.X=Y)")
            key = key.strip()
            if key.startswith("value."):
                raw.setdefault("values", {})[key[len("value."):]] = value.strip()
            else:
                raw[key] = value.strip()
    values = raw.pop("values", {}) or {}
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown or not isinstance(values, dict):
        raise ConfigError(f"option --map: unknown key(s) {', '.join(map(shown, unknown)) or 'values'}; known: "
                          f"{', '.join(_KEYS)}, value.SHOWN=MEANT")
    if bool(raw.get("a")) != bool(raw.get("b")):
        raise ConfigError("option --map: give both a= and b= (the fields of answer A and answer B), or neither")
    return FieldMap(**{k: str(v) for k, v in raw.items()}, values={str(k): str(v) for k, v in values.items()})


def resolve(obj: Any, path: str) -> Any:
    """A dotted path into nested objects (`data.pair_id`, `completed_by.email`); None where it is absent."""
    for key in path.split("."):
        if not isinstance(obj, Mapping) or key not in obj:
            return None
        obj = obj[key]
    return obj


@dataclass
class Shape:
    """What a foreign import detected or was told, printed and stored beside the ratings (`mapping`)."""

    item: str
    rater: str
    questions: set[str] = field(default_factory=set)
    labels: str = "values"

    def to_dict(self, fmap: FieldMap | None) -> dict[str, Any]:
        return {"given": fmap.to_dict() if fmap else None, "item": self.item, "rater": self.rater,
                "question": sorted(self.questions), "labels": self.labels}


def pick_question(answers: Mapping[str, tuple[str, Any]], fmap: FieldMap | None) -> str | Unmappable | None:
    """The question to read among a row's answers (name -> (kind, value)): the mapped one, the one pairwise
    control, or the only one; None: no answer (or not to the mapped question) in this row."""
    if not answers:
        return None
    if fmap and fmap.question:
        return fmap.question if fmap.question in answers else None
    pairwise = [n for n, (kind, _) in answers.items() if kind == "pairwise"]
    if len(pairwise) == 1:
        return pairwise[0]
    if len(answers) == 1:
        return next(iter(answers))
    return Unmappable(f"several questions answered ({', '.join(sorted(answers))}): give --map question=NAME")


def foreign_label(kind: str, value: Any, task: Any, fmap: FieldMap | None) -> Label:
    """One answer of a foreign row -> its label; raises Tie (an abstention) or Unmappable (counted)."""
    if isinstance(value, list):
        if len(value) != 1:
            raise Unmappable(f"exactly one choice expected, got {value!r}")
        value = value[0]
    if isinstance(value, str) and fmap and value in fmap.values:
        value = fmap.values[value]
    if isinstance(value, str) and value.strip().lower() in TIE_WORDS:
        raise Tie
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind == "pairwise" or (isinstance(value, str) and value in SIDES and fmap is not None and fmap.answers):
        if value not in SIDES:
            raise Unmappable(f"a side must be left or right, got {value!r}")
        return side_to_answer(str(value), task, fmap) if fmap and fmap.answers else str(value)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise Unmappable(f"an answer must be a choice or a number, got {value!r}")
    return value


def side_to_answer(side: str, task: Any, fmap: FieldMap) -> str:
    """The answer (A / B) shown on `side` of this task: the side whose text equals answer A's field."""
    assert fmap.a and fmap.b
    shown = resolve(task, (fmap.left or fmap.a) if side == "left" else (fmap.right or fmap.b))
    a, b = resolve(task, fmap.a), resolve(task, fmap.b)
    if shown is None or a is None or b is None:
        missing = [p for p, v in ((fmap.left or fmap.a, shown), (fmap.a, a), (fmap.b, b)) if v is None]
        raise Unmappable(f"the task has no {', '.join(missing)}")
    if a == b:
        raise Unmappable("answers A and B are the same text: the side cannot tell them apart")
    if shown == a:
        return "A"
    if shown == b:
        return "B"
    raise Unmappable(f"the {side} side shows neither answer A ({fmap.a}) nor answer B ({fmap.b})")


def item_id(task: Any, fmap: FieldMap | None, default: str) -> str | Unmappable:
    path = fmap.item if fmap and fmap.item else default
    value = resolve(task, path)
    if value is None or isinstance(value, dict | list) or str(value) == "":
        return Unmappable(f"no item id at {path!r}: give --map item=PATH")
    if isinstance(value, bool):  # true / false is no id: a broken export, never the item "True"
        return Unmappable(f"the item id at {path!r} is {str(value).lower()}, not an id")
    return str(value)


def rater_of(annotation: Any, fmap: FieldMap | None, default: str) -> str:
    value = resolve(annotation, fmap.rater if fmap and fmap.rater else default)
    if isinstance(value, dict):
        value = value.get("email") or value.get("id")
    return "" if value is None or isinstance(value, bool) else str(value)


def add_answer(col: Collector, shape: Shape, row: Any, answers: Mapping[str, tuple[str, Any]], item: str | Unmappable,
               rater: str, fmap: FieldMap | None, where: tuple[str | Path, int | None]) -> None:
    """One foreign annotation (its answers by question name) -> a rating, a counted abstention, or unmappable."""
    path, line = where
    if isinstance(item, Unmappable):
        col.unmappable(path, line, str(item))
        return
    if not rater:
        col.unmappable(path, line, "no annotator (rater) named: give --map rater=PATH")
        return
    question = pick_question(answers, fmap)
    if question is None:
        col.count("empty")
        return
    if isinstance(question, Unmappable):
        col.unmappable(path, line, str(question))
        return
    kind, value = answers[question]
    try:
        label = foreign_label(kind, value, row, fmap)
    except Tie:
        col.count("tie (abstention)")
        return
    except Unmappable as exc:
        col.unmappable(path, line, f"item {item!r}, question {question!r}: {exc}")
        return
    shape.questions.add(question)
    if label in SIDES:
        shape.labels = "sides (left / right)"
    elif label in ("A", "B") and fmap and fmap.answers:
        shape.labels = "answers A / B"
    col.rate(item, rater, label, path, line)


def finish(col: Collector, shape: Shape, fmap: FieldMap | None) -> None:
    """The mapping into the report (printed, and written beside the ratings), and the note on sides."""
    col.report.mapping = shape.to_dict(fmap)
    if shape.labels.startswith("sides"):
        col.report.notes.append(SIDES_NOTE)
