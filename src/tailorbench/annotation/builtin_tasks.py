"""The four built-in task types of both papers: pairwise choice (PersonaFeedback), attribute judgment (stage 1),
relevance (stage 2) and the 5-point A/B rating (stage 3). Imported on first use through `tasks.TASK_TYPES`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tailorbench.agreement.ratings import Label
from tailorbench.annotation.tasks import (
    ATTR_SEP,
    JUDGMENTS,
    SCALE,
    TASK_TYPES,
    AttributeTask,
    ExportOptions,
    FormError,
    ItemError,
    TaskType,
    normalise_attributes,
    object_field,
    one_of,
    text_field,
)
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import write_json_atomic

if TYPE_CHECKING:
    from tailorbench.agreement.ratings import RatingSet


def _conversation(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str) and value.strip():
        return [{"role": "", "content": value}]
    if not isinstance(value, list) or not value:
        raise ItemError("conversation", "must be a non-empty string or list of {role, content} turns")
    turns = []
    for i, turn in enumerate(value):
        if isinstance(turn, str):
            turns.append({"role": "", "content": turn})
            continue
        if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
            raise ItemError(f"conversation[{i}]", "each turn must be a string or {role, content}")
        turns.append({"role": str(turn.get("role", "")), "content": turn["content"]})
    return turns


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@TASK_TYPES.register("pairwise")
class Pairwise(TaskType):
    """PersonaFeedback's pairwise choice: which of two answers fits the person, with an optional confidence.
    Imports PairCase and construction-pipeline files, and a benchmark in any registered layout, too; exports a
    benchmark with agreement tiers."""

    name = "pairwise"
    title = "Pairwise choice"
    import_formats = ("paircase", "pipeline", "items", "benchmark")
    random_order = True
    export_files = ("benchmark.jsonl", "tiers.json")

    def payload(self, row: Mapping[str, Any]) -> dict[str, Any]:
        out = {
            "split": text_field(row, "split"),
            "user_id": text_field(row, "user_id"),
            "persona": object_field(row, "persona"),
            "question": text_field(row, "question"),
            "answer_a": text_field(row, "answer_a"),
            "answer_b": text_field(row, "answer_b"),
        }
        return out  # the split is checked against the file's declared names by the importer

    def check_gold(self, gold: Any, payload: dict[str, Any]) -> Any:
        if gold not in ("A", "B"):
            raise ItemError("gold", "pairwise gold must be 'A' or 'B'")
        return gold

    def detect_format(self, path: Path) -> str:
        """paircase (has tier + chosen), pipeline (chosen, no tier), else items (answer_a)."""
        for line, row in read_jsonl(path, InvalidRows()):
            if "answer_a" in row:
                return "items"
            if "chosen" in row:
                return "paircase" if "tier" in row else "pipeline"
            raise DataError(path, line, None, "cannot tell the format: no 'answer_a' (items) nor 'chosen' (PairCase)")
        raise DataError(path, None, None, "file has no rows")

    def view(self, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
        answers = [payload["answer_a"], payload["answer_b"]]
        return {**super().view(payload, layout), "question": payload["question"],
                "answers": answers[::-1] if layout.get("swap") else answers}

    def parse_form(self, payload: dict[str, Any], layout: dict[str, Any],
                   form: Mapping[str, str]) -> dict[str, Any]:
        shown = one_of(form, "choice", ("1", "2"), "answer")
        swap = bool(layout.get("swap"))
        choice = ("A" if shown == "1" else "B") if not swap else ("B" if shown == "1" else "A")
        conf = (form.get("confidence") or "").strip()
        if conf not in ("", "1", "2", "3"):
            raise FormError("confidence must be 1, 2 or 3")
        return {"choice": choice, "confidence": int(conf) if conf else None}

    def to_ratings(self, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Label]]:
        return [(ext_id, value["choice"])]

    def gold_score(self, gold: Any, value: dict[str, Any]) -> float:
        return float(value["choice"] == gold)

    def export_extra(self, out: Path, ratings: RatingSet, options: ExportOptions) -> dict[str, Any]:
        """benchmark.jsonl (PairCase with majority labels and agreement tiers) and tiers.json."""
        from tailorbench.agreement.tiers import TierRule, build_tiers, read_items, splits_in_order, write_cases

        rule = TierRule(easy=options.easy, medium=options.medium,
                        min_ratings=options.min_ratings or max(2, min(3, options.n_per_item)))
        items = out / "items.jsonl"
        splits = splits_in_order(rec["split"] for _, rec in read_items(items).values())
        cases, tiers = build_tiers(items, ratings, rule, n_resamples=200, splits=splits)
        write_cases(cases, out / "benchmark.jsonl", splits)
        write_json_atomic(out / "tiers.json", tiers)
        return {"benchmark_cases": len(cases)}


@TASK_TYPES.register("attributes")
class Attributes(AttributeTask):
    """Stage 1: is each inferred attribute supported by the conversation (accepted / uncertain / rejected)."""

    name = "attributes"
    title = "Attribute judgment"
    agreement_order: ClassVar[list[str] | None] = ["rejected", "uncertain", "accepted"]

    def payload(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return {"user_id": str(row.get("user_id", "")), "conversation": _conversation(row.get("conversation")),
                "attributes": normalise_attributes(row.get("attributes"))}

    def gold_label_ok(self, value: Any) -> bool:
        return value in JUDGMENTS

    def view(self, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
        return {**super().view(payload, layout), "conversation": payload["conversation"], "judgments": JUDGMENTS}

    def parse_form(self, payload: dict[str, Any], layout: dict[str, Any],
                   form: Mapping[str, str]) -> dict[str, Any]:
        judged = {
            a["key"]: {
                "judgment": one_of(form, f"j_{a['key']}", JUDGMENTS, f"attribute {a['text']!r}"),
                "note": (form.get(f"n_{a['key']}") or "").strip(),
            }
            for a in payload.get("attributes", [])
        }
        return {"attributes": judged, "missing": (form.get("missing") or "").strip()}

    def to_ratings(self, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Label]]:
        return [(f"{ext_id}{ATTR_SEP}{k}", v["judgment"]) for k, v in value["attributes"].items()]


@TASK_TYPES.register("relevance")
class Relevance(AttributeTask):
    """Stage 2: should each of the user's attributes change the response to this prompt (yes / no)."""

    name = "relevance"
    title = "Attribute relevance"

    def payload(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return {"user_id": str(row.get("user_id", "")), "prompt": text_field(row, "prompt"),
                "attributes": normalise_attributes(row.get("attributes"))}

    def gold_label_ok(self, value: Any) -> bool:
        return isinstance(value, bool)

    def view(self, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
        return {**super().view(payload, layout), "prompt": payload["prompt"]}

    def parse_form(self, payload: dict[str, Any], layout: dict[str, Any],
                   form: Mapping[str, str]) -> dict[str, Any]:
        return {
            "relevance": {
                a["key"]: one_of(form, f"r_{a['key']}", ("yes", "no"), f"attribute {a['text']!r}") == "yes"
                for a in payload.get("attributes", [])
            }
        }

    def to_ratings(self, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Label]]:
        return [(f"{ext_id}{ATTR_SEP}{k}", bool(v)) for k, v in value["relevance"].items()]


@TASK_TYPES.register("ab_rating")
class ABRating(AttributeTask):
    """Stage 3: the personalized answer against the generic one, per relevant attribute, on a 5-point scale;
    stored as -2..2 for personalized vs generic whatever order the annotator saw."""

    name = "ab_rating"
    title = "A/B rating"
    random_order = True

    def payload(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "user_id": str(row.get("user_id", "")),
            "prompt": text_field(row, "prompt"),
            "generic": text_field(row, "generic"),
            "personalized": text_field(row, "personalized"),
            "persona": object_field(row, "persona"),
            "attributes": normalise_attributes(row.get("attributes")),
        }

    def gold_label_ok(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and -2 <= value <= 2

    def label_matches(self, label: Label | None, expected: Any) -> bool:
        """The direction (better / same / worse) must match."""
        if isinstance(label, int) and not isinstance(label, bool):
            return _sign(label) == _sign(int(expected))
        return label == expected

    def view(self, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
        answers = [payload["generic"], payload["personalized"]]
        return {**super().view(payload, layout), "prompt": payload["prompt"],
                "answers": answers[::-1] if layout.get("swap") else answers, "scale": SCALE}

    def parse_form(self, payload: dict[str, Any], layout: dict[str, Any],
                   form: Mapping[str, str]) -> dict[str, Any]:
        swap = bool(layout.get("swap"))
        ratings: dict[str, int] = {}
        for a in payload.get("attributes", []):
            score = int(one_of(form, f"s_{a['key']}", ("1", "2", "3", "4", "5"), f"attribute {a['text']!r}")) - 3
            # the scale rates answer 2 against answer 1; answer 2 is the personalized one unless swapped
            ratings[a["key"]] = -score if swap else score
        return {"ratings": ratings}

    def to_ratings(self, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Label]]:
        return [(f"{ext_id}{ATTR_SEP}{k}", int(v)) for k, v in value["ratings"].items()]
