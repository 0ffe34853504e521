"""Annotation task types: one class each, in the `TASK_TYPES` registry.

A task type decides everything that differs between kinds of annotation work: how an imported item row is
validated (`payload`, `check_gold`), which import formats it accepts, what its page shows (`template`, `view`),
how answers are shown in a random order per assignment (`new_layout`), how a submitted form becomes a canonical
label (`parse_form`), how a label becomes rows of the long rating format (`to_ratings`), how a label is scored
against a gold answer (`gold_score`), the category order of its agreement statistics (`agreement_order`), and
any extra export files (`export_extra`). The service, the importer, the submission path and the web pages call
these methods and never look at a task type's name.

The four built-in types (pairwise choice, attribute judgment, relevance, 5-point A/B rating) live in
`annotate/builtin_tasks.py`; a plugin registers its own class with `@TASK_TYPES.register("name")` in a module
named by an entry point in the group `tailorbench.task_types` (docs/annotation.md, "Adding a task type").

Canonical means independent of what the annotator saw: answers are stored as A/B (pairwise) or
personalized-vs-generic (A/B rating) even though each assignment shows them in its own recorded random order.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tailorbench.agreement.ratings import Label
from tailorbench.personas import render_persona
from tailorbench.registry import Registry

if TYPE_CHECKING:
    from tailorbench.agreement.ratings import RatingSet

JUDGMENTS = ("accepted", "uncertain", "rejected")
SCALE = (
    (1, "much worse"),
    (2, "worse"),
    (3, "about the same"),
    (4, "better"),
    (5, "much better"),
)
#: separator between item id and attribute key in exported rating items
ATTR_SEP = "::"


class ItemError(ValueError):
    """A field of an imported item is wrong; the importer adds file and line."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class FormError(ValueError):
    """A submitted form is incomplete or invalid (HTTP 422 with the message)."""


@dataclass(frozen=True)
class ExportOptions:
    """What `tailor annotate export` passes on to a task type's extra export files (pairwise: the tiers)."""

    n_per_item: int
    min_ratings: int | None = None
    easy: float = 0.75
    medium: float = 0.6


# --- helpers for a task type's import schema and form ----------------------------------------------


def text_field(row: Mapping[str, Any], key: str, required: bool = True) -> str:
    """`row[key]` as a non-empty string (absent and not required: "")."""
    value = row.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ItemError(key, "missing or not a non-empty string")
    return value


def object_field(row: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`row[key]` as a JSON object (absent: {})."""
    value = row.get(key) or {}
    if not isinstance(value, dict):
        raise ItemError(key, "must be a JSON object")
    return value


def normalise_attributes(value: Any, field: str = "attributes") -> list[dict[str, str]]:
    """`["likes tea", {"id": "diet", "text": "vegetarian"}, {"name": "age", "value": "30s"}]` ->
    `[{"key": "1", "text": "likes tea"}, {"key": "diet", "text": "vegetarian"}, {"key": "3", "text": "age: 30s"}]`.
    Keys name the attribute in exports, so they must be unique within an item."""
    if not isinstance(value, list) or not value:
        raise ItemError(field, "must be a non-empty list of attributes")
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, attr in enumerate(value):
        where = f"{field}[{i}]"
        if isinstance(attr, str):
            key, text = str(i + 1), attr
        elif isinstance(attr, dict):
            key = str(attr.get("id", attr.get("key", i + 1)))
            text = attr.get("text") or attr.get("attribute") or attr.get("name") or ""
            if not isinstance(text, str):
                raise ItemError(where, "attribute text must be a string")
            if attr.get("value") not in (None, ""):
                text = f"{text}: {attr['value']}" if text else str(attr["value"])
        else:
            raise ItemError(where, "must be a string or an object with 'text'")
        if not text.strip():
            raise ItemError(where, "empty attribute")
        if not key.strip() or ATTR_SEP in key:
            raise ItemError(where, f"bad attribute id {key!r} (empty or containing {ATTR_SEP!r})")
        if key in seen:
            raise ItemError(where, f"duplicate attribute id {key!r}")
        seen.add(key)
        out.append({"key": key, "text": text})
    return out


def one_of(form: Mapping[str, str], key: str, allowed: tuple[str, ...], what: str) -> str:
    """The form field `key`, which must be one of `allowed` (FormError naming `what` otherwise)."""
    value = (form.get(key) or "").strip()
    if value not in allowed:
        raise FormError(f"{what}: choose one of {', '.join(allowed)}")
    return value


# --- the task type --------------------------------------------------------------------------------------


class TaskType(ABC):
    """One kind of annotation work. Subclass it, set `name` and `title`, implement the abstract methods, ship a
    template, and register the class: `@TASK_TYPES.register("name")`. Instances hold no state (one is made per
    class and reused for every request)."""

    #: the name projects store and users type (`--task-type NAME`)
    name: ClassVar[str]
    #: shown on pages ("Pairwise choice")
    title: ClassVar[str]
    #: the page's Jinja template; it extends `base.html`, includes `_task_head.html` and `_task_foot.html`
    #: inside its `<form method="post" action="/a/{{ assignment.id }}">`, and finds the view as `v`
    template: ClassVar[str] = ""
    #: a folder holding `template` when it is not one of the package's own templates (plugins)
    template_dir: ClassVar[Path | None] = None
    #: import formats accepted besides `items` (the built-in readers of PairCase files are pairwise-only)
    import_formats: ClassVar[tuple[str, ...]] = ("items",)
    #: two answers shown in a random order recorded per assignment (`layout["swap"]`)
    random_order: ClassVar[bool] = False
    #: category order for agreement statistics (weighted kappa, ordinal alpha); None = nominal or integers
    agreement_order: ClassVar[list[str] | None] = None
    #: export files this type writes besides ratings, items and labels (see `export_extra`)
    export_files: ClassVar[tuple[str, ...]] = ()

    def page_template(self) -> str:
        return self.template or f"task_{self.name}.html"

    # -- import --------------------------------------------------------------------------------------

    def item_from_row(self, row: Mapping[str, Any]) -> tuple[str, dict[str, Any], Any]:
        """Validate one items-JSONL row -> (item id, payload, gold or None); ItemError names the field."""
        item_id = row.get("id")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)
        if not isinstance(item_id, str) or not item_id.strip():
            raise ItemError("id", "missing or not a non-empty string")
        payload: dict[str, Any] = {"id": item_id, "meta": object_field(row, "meta")}
        payload.update(self.payload(row))
        gold = row.get("gold")
        return item_id, payload, None if gold is None else self.check_gold(gold, payload)

    @abstractmethod
    def payload(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The item's own fields, checked (`id` and `meta` are the base's); raise ItemError(field, message)."""

    def check_gold(self, gold: Any, payload: dict[str, Any]) -> Any:
        """A gold answer in the canonical label form -> the stored gold; ItemError("gold", ...) when wrong."""
        raise ItemError("gold", f"task type {self.name!r} has no gold answers")

    def detect_format(self, path: Path) -> str:
        """The import format of a file under `--format auto` (one of `import_formats`)."""
        return "items"

    # -- page and submission -------------------------------------------------------------------------

    def new_layout(self) -> dict[str, Any]:
        """The presentation drawn for a new assignment and stored with it (the answer order)."""
        return {"swap": secrets.randbelow(2) == 1} if self.random_order else {}

    def shown_order(self, layout: dict[str, Any]) -> str | None:
        """The order the annotator saw, for `labels.jsonl` (`AB`/`BA`; None without a random order)."""
        return ("BA" if layout.get("swap") else "AB") if layout else None

    def view(self, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
        """What the page shows (`v` in the template), answers already in the assignment's order. Texts are
        escaped by Jinja. The base gives `attributes` and `persona_text`; subclasses add their own."""
        persona = payload.get("persona") or {}
        return {"attributes": payload.get("attributes", []),
                "persona_text": render_persona(persona) if persona else ""}

    @abstractmethod
    def parse_form(self, payload: dict[str, Any], layout: dict[str, Any],
                   form: Mapping[str, str]) -> dict[str, Any]:
        """A submitted form -> the canonical label value (JSON); FormError (422, nothing stored) when a field
        is missing or wrong. `flag`, `note` and `elapsed_ms` are the service's, never the task type's."""

    # -- export and scoring --------------------------------------------------------------------------

    @abstractmethod
    def to_ratings(self, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Label]]:
        """A canonical label -> (rating item, label) pairs of the long format (`docs/agreement.md`)."""

    def gold_score(self, gold: Any, value: dict[str, Any]) -> float:
        """Share of the gold answer matched; the base compares a single-rating label with the gold label."""
        got = self.to_ratings("", value)
        return float(len(got) == 1 and got[0][1] == gold)

    def export_extra(self, out: Path, ratings: RatingSet, options: ExportOptions) -> dict[str, Any]:
        """Write the files of `export_files` into `out` (after `items.jsonl` and `ratings.jsonl`); returns
        what the export summary adds (pairwise: the benchmark and its tiers)."""
        return {}


class AttributeTask(TaskType):
    """A task type with one label per attribute of an item: rating items `ID::ATTR`, gold `{attr: label}`."""

    def check_gold(self, gold: Any, payload: dict[str, Any]) -> Any:
        if not isinstance(gold, dict) or not gold:
            raise ItemError("gold", "must be an object {attribute id: expected label}")
        keys = {a["key"] for a in payload["attributes"]}
        for key, value in gold.items():
            if key not in keys:
                raise ItemError("gold", f"unknown attribute id {key!r}")
            if not self.gold_label_ok(value):
                raise ItemError("gold", f"bad gold label {value!r} for attribute {key!r}")
        return gold

    @abstractmethod
    def gold_label_ok(self, value: Any) -> bool:
        """Whether `value` is a valid gold label of one attribute."""

    def label_matches(self, label: Label | None, expected: Any) -> bool:
        return label == expected

    def gold_score(self, gold: Any, value: dict[str, Any]) -> float:
        got = dict(self.to_ratings("", value))
        hits = sum(self.label_matches(got.get(f"{ATTR_SEP}{key}"), expected) for key, expected in gold.items())
        return hits / len(gold)


#: name -> TaskType subclass; the built-ins are imported on first use, plugins come by entry point
TASK_TYPES: Registry[type[TaskType]] = Registry(
    "task type", "tailorbench.task_types",
    lazy={name: "tailorbench.annotation.builtin_tasks"
          for name in ("pairwise", "attributes", "relevance", "ab_rating")},
)
_INSTANCES: dict[type[TaskType], TaskType] = {}


def task_type(name: str) -> TaskType:
    """The task type called `name` (one instance per class); ConfigError listing the registered ones if none."""
    cls = TASK_TYPES.get(name)
    inst = _INSTANCES.get(cls)
    if inst is None:
        inst = _INSTANCES[cls] = cls()
    return inst


def check_task_type(name: str) -> str:
    """The stored form of a task type name (lower case); ConfigError for an unknown one."""
    task_type(name)
    return name.strip().lower()


def task_title(name: str) -> str:
    """For pages: the title of a task type, or its name when it is not installed (any more)."""
    return task_type(name).title if name in TASK_TYPES else name


# --- by name: the calls of code that holds a task type's name (stages, tests, scripts) --------------------


def item_from_row(task: str, row: Mapping[str, Any]) -> tuple[str, dict[str, Any], Any]:
    return task_type(task).item_from_row(row)


def view(task: str, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
    return task_type(task).view(payload, layout)


def parse_form(task: str, payload: dict[str, Any], layout: dict[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    return task_type(task).parse_form(payload, layout, form)


def to_ratings(task: str, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Label]]:
    return task_type(task).to_ratings(ext_id, value)


def gold_score(task: str, gold: Any, value: dict[str, Any]) -> float:
    return task_type(task).gold_score(gold, value)
