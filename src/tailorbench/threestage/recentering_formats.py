"""The study's file formats, read as the Re-Centering Humans annotation tool writes them, into agreement's long
format; the stage-2 item file and the model-vote files the stages write.

Why: existing studies must be analysable without conversion scripts, and every statistic must come from
`agreement/`, so each shape becomes `Rating`s (item = (index, user_id, attribute text), rater = `annotator` or
`model`). Nothing that does not line up is dropped silently: votes for items no human rated, attribute texts that
differ between raters, judgments without an attribute and null votes are counted in an `Alignment`.

Shapes (one JSON object per line):
- stage 2, human: `{"task": "3", "index", "user_id", "prompt_index", "relevance_judgments": [{"attribute",
  "relevant"}], "annotator", ...}`;
- stage 2, model: `{"model", "sample_index", "user_id", "items": [{"attribute", "relevant", "raw_answer"}]}`
  (`sample_index` is the human `index`; `relevant: null` is an invalid vote, counted as missing);
- stage 2, item file: `{"index", "user_id", "prompt_index"?, "prompt", "attributes"}` — the human task-3 files
  carry no prompt text, so baselines and LLM judges read it from here; its index is the one the human files use,
  so votes written from it line up with the humans;
- stage 1, human: `{"task": "1", "index", "attr_judgments": [{"judgment": "ok"|"unsure"|"bad", "note"}],
  "annotator", ...}` with the attributes by position in the item file `{"index", "user_id", "attributes",
  "conversations"}`.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.agreement.ratings import Rating, RatingSet, merge_ratings
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import Output

HUMAN = "human"
MODEL = "model"
#: stage-1 judgments of the Re-Centering tool -> the annotation service's vocabulary (one vocabulary downstream)
JUDGMENT_MAP = {"ok": "accepted", "unsure": "uncertain", "bad": "rejected"}
JUDGMENT_ORDER = ["rejected", "uncertain", "accepted"]
#: the annotation service's separator between task id and attribute key in its exports, `ID::KEY`
#: (annotate/tasks.py ATTR_SEP)
ATTR_SEP = "::"


def item_key(index: int, user_id: str, attribute: str) -> str:
    """The rating item of one attribute of one study item; JSON so it can be split back without ambiguity."""
    return json.dumps([index, user_id, attribute], ensure_ascii=False)


def split_key(key: str) -> tuple[int, str, str]:
    index, user_id, attribute = json.loads(key)
    return int(index), str(user_id), str(attribute)


def jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line; anything else is a DataError naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file")
    yield from read_jsonl(path, InvalidRows())


def get_int(rec: dict[str, Any], key: str, path: str | Path, line: int) -> int:
    """An index of these files (`index`, `prompt_index`, `sample_index`): an integer 0 or more, or its decimal
    digits as text; a bool, a negative number or `1_0` is a DataError."""
    value = rec.get(key)
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(path, line, key, f"must be an index (an integer, 0 or more), got {value!r}")
    return value


def get_str(rec: dict[str, Any], key: str, path: str | Path, line: int, text: bool = False) -> str:
    """A non-empty string; an id (`text` False) may be written as an integer, a text (a prompt, an answer, an
    attribute: `text` True) may not."""
    value = rec.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and not text:
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise DataError(path, line, key, f"must be a non-empty string, got {value!r}")
    return value


def get_list(rec: dict[str, Any], key: str, path: str | Path, line: int) -> list[Any]:
    value = rec.get(key)
    if not isinstance(value, list):
        raise DataError(path, line, key, f"must be a list, got {type(value).__name__}")
    return value


def get_float_or_none(rec: dict[str, Any], key: str, path: str | Path, line: int) -> float | None:
    if key not in rec:
        raise DataError(path, line, key, "missing (use null for no value)")
    value = rec[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(path, line, key, f"must be a number, got {value!r}")
    return float(value)


@dataclass
class Alignment:
    """What did not line up between raters, with counts (shown in every report)."""

    #: rater -> votes on items that no human rated
    model_votes_without_human: Counter[str] = field(default_factory=Counter)
    #: (index, user_id) items whose attribute texts differ between raters
    attribute_text_mismatch_items: int = 0
    #: attributes rated by some raters of an item but absent from another rater's list for that item
    attribute_text_mismatch_attributes: int = 0
    mismatch_examples: list[dict[str, Any]] = field(default_factory=list)
    #: rater -> votes whose (index) exists for humans but under another user_id
    user_id_mismatches: Counter[str] = field(default_factory=Counter)
    #: stage 1: judgments beyond the item's attribute list / attributes left without a judgment
    judgments_without_attribute: int = 0
    attributes_without_judgment: int = 0
    lines_for_unknown_items: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_votes_without_human": dict(sorted(self.model_votes_without_human.items())),
            "attribute_text_mismatch": {
                "items": self.attribute_text_mismatch_items,
                "attributes_not_shared": self.attribute_text_mismatch_attributes,
                "examples": self.mismatch_examples[:5],
            },
            "user_id_mismatches": dict(sorted(self.user_id_mismatches.items())),
            "judgments_without_attribute": self.judgments_without_attribute,
            "attributes_without_judgment": self.attributes_without_judgment,
            "lines_for_unknown_items": self.lines_for_unknown_items,
        }


# --- stage 2 ------------------------------------------------------------------------------------------


def _vote(entry: Any, path: str | Path, line: int, where: str) -> tuple[str, bool | None]:
    if not isinstance(entry, dict):
        raise DataError(path, line, where, "must be an object {attribute, relevant}")
    attr = entry.get("attribute")
    if not isinstance(attr, str) or not attr.strip():
        raise DataError(path, line, f"{where}.attribute", f"must be a non-empty string, got {attr!r}")
    relevant = entry.get("relevant")
    if relevant is not None and not isinstance(relevant, bool):
        raise DataError(path, line, f"{where}.relevant", f"must be true or false, got {relevant!r}")
    return attr, relevant


def read_relevance_file(path: str | Path, group: str) -> RatingSet:
    """One human (task 3) or model-vote file -> ratings with boolean labels; null votes are counted missing."""
    out = RatingSet(sources=[str(path)])
    list_key, rater_key, index_key = (
        ("relevance_judgments", "annotator", "index") if group == HUMAN else ("items", "model", "sample_index")
    )
    for line, rec in jsonl(path):
        if group == HUMAN and str(rec.get("task", "3")) != "3":
            raise DataError(path, line, "task", f"expected a stage-2 (task 3) line, got task {rec.get('task')!r}")
        rater = get_str(rec, rater_key, path, line)
        index = get_int(rec, index_key, path, line)
        user = get_str(rec, "user_id", path, line)
        seen: set[str] = set()
        for j, entry in enumerate(get_list(rec, list_key, path, line)):
            attr, relevant = _vote(entry, path, line, f"{list_key}[{j}]")
            status = entry.get("status") if isinstance(entry.get("status"), str) else "null"
            if attr in seen:
                raise DataError(path, line, f"{list_key}[{j}].attribute", f"attribute {attr!r} appears twice")
            seen.add(attr)
            if relevant is None:
                out.missing[f"{status} vote ({group})"] += 1
                continue
            out.ratings.append(Rating(item_key(index, user, attr), rater, relevant, group, str(path), line))
    return out


def read_relevance(
    human: Sequence[str | Path], model: Sequence[str | Path] = ()
) -> tuple[RatingSet, Alignment]:
    """Human and model relevance files -> one rating set (checked by agreement's merge) and what did not align."""
    parts = [read_relevance_file(p, HUMAN) for p in human] + [read_relevance_file(p, MODEL) for p in model]
    ratings = merge_ratings(parts)
    return ratings, align(ratings.ratings)


def align(ratings: Iterable[Rating]) -> Alignment:
    """Count model votes without any human rating and attribute texts that differ between raters of an item."""
    ratings = list(ratings)
    report = Alignment()
    human_items = {r.item for r in ratings if r.group == HUMAN}
    human_users: dict[int, set[str]] = defaultdict(set)
    by_item: dict[tuple[int, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in ratings:
        index, user, attr = split_key(r.item)
        by_item[index, user][r.rater].add(attr)
        if r.group == HUMAN:
            human_users[index].add(user)
    for r in ratings:
        if r.group != HUMAN and r.item not in human_items:
            report.model_votes_without_human[r.rater] += 1
            index, user, _ = split_key(r.item)
            if index in human_users and user not in human_users[index]:
                report.user_id_mismatches[r.rater] += 1
    for (index, user), per_rater in sorted(by_item.items()):
        sets = list(per_rater.values())
        if len(sets) < 2 or all(s == sets[0] for s in sets):
            continue
        union = set().union(*sets)
        common = set.intersection(*sets)
        report.attribute_text_mismatch_items += 1
        report.attribute_text_mismatch_attributes += len(union - common)
        if len(report.mismatch_examples) < 5:
            report.mismatch_examples.append(
                {
                    "index": index,
                    "user_id": user,
                    "not_shared": {
                        rater: sorted(attrs - common) for rater, attrs in sorted(per_rater.items()) if attrs - common
                    },
                }
            )
    return report


@dataclass(frozen=True)
class RelevanceItem:
    """One line of the stage-2 item file: a user's new prompt and the attributes shown for it."""

    index: int
    user_id: str
    prompt: str
    attributes: list[str]
    prompt_index: int | None = None


def read_relevance_items(path: str | Path) -> list[RelevanceItem]:
    """The stage-2 item file; an index given twice or an empty or repeated attribute is a DataError."""
    out: list[RelevanceItem] = []
    seen: set[int] = set()
    for line, rec in jsonl(path):
        index = get_int(rec, "index", path, line)
        if index in seen:
            raise DataError(path, line, "index", f"index {index} appears twice")
        seen.add(index)
        attrs = get_list(rec, "attributes", path, line)
        for j, a in enumerate(attrs):
            if not isinstance(a, str) or not a.strip():
                raise DataError(path, line, f"attributes[{j}]", f"must be a non-empty string, got {a!r}")
        if len(set(attrs)) != len(attrs):
            raise DataError(path, line, "attributes", "an attribute appears twice")
        pi = None if rec.get("prompt_index") is None else get_int(rec, "prompt_index", path, line)
        out.append(RelevanceItem(index, get_str(rec, "user_id", path, line),
                                 get_str(rec, "prompt", path, line, text=True), list(attrs), pi))
    return out


def write_votes(
    out: Output, model: str, items: Sequence[RelevanceItem], votes: Iterable[Sequence[dict[str, Any]]],
    name: str | None = None,
) -> None:
    """Votes in the Re-Centering model shape (`relevant: null` + `status` for an invalid or failed vote), as the
    file output `out` (or the file `name` of a folder output)."""
    out.write_jsonl(name, ({"model": model, "sample_index": item.index, "user_id": item.user_id,
                            "items": list(entries)} for item, entries in zip(items, votes)))


# --- stage 1 ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage1Item:
    """One user's extracted attributes, as shown to annotators (plus optional extractor/source metadata)."""

    index: int
    user_id: str
    attributes: list[str]
    conversations: list[Any]
    extractor: str = "unknown"
    source: str = "unknown"
    evidence: list[list[int]] | None = None


def read_stage1_items(path: str | Path) -> dict[int, Stage1Item]:
    """The study's item file; `extractor` and `source` (e.g. real / synthetic) are optional grouping keys."""
    items: dict[int, Stage1Item] = {}
    for line, rec in jsonl(path):
        index = get_int(rec, "index", path, line)
        if index in items:
            raise DataError(path, line, "index", f"index {index} appears twice")
        attrs = get_list(rec, "attributes", path, line)
        for j, a in enumerate(attrs):
            if not isinstance(a, str) or not a.strip():
                raise DataError(path, line, f"attributes[{j}]", f"must be a non-empty string, got {a!r}")
        convs = rec.get("conversations", [])
        if not isinstance(convs, list):
            raise DataError(path, line, "conversations", "must be a list")
        evidence = rec.get("evidence")
        items[index] = Stage1Item(
            index=index,
            user_id=get_str(rec, "user_id", path, line),
            attributes=list(attrs),
            conversations=convs,
            extractor=str(rec.get("extractor") or "unknown"),
            source=str(rec.get("source") or "unknown"),
            evidence=evidence if isinstance(evidence, list) else None,
        )
    return items


def read_stage1_file(path: str | Path, items: dict[int, Stage1Item], report: Alignment) -> RatingSet:
    """One annotator's task-1 file -> ratings labelled accepted / uncertain / rejected."""
    out = RatingSet(sources=[str(path)])
    for line, rec in jsonl(path):
        if str(rec.get("task", "1")) != "1":
            raise DataError(path, line, "task", f"expected a stage-1 (task 1) line, got task {rec.get('task')!r}")
        rater = get_str(rec, "annotator", path, line)
        index = get_int(rec, "index", path, line)
        judgments = get_list(rec, "attr_judgments", path, line)
        item = items.get(index)
        if item is None:
            report.lines_for_unknown_items += 1
            out.missing["judgments for an index missing from the item file"] += len(judgments)
            continue
        if len(judgments) > len(item.attributes):
            report.judgments_without_attribute += len(judgments) - len(item.attributes)
            out.missing["judgment without an attribute"] += len(judgments) - len(item.attributes)
        report.attributes_without_judgment += max(0, len(item.attributes) - len(judgments))
        for j, (attr, entry) in enumerate(zip(item.attributes, judgments)):
            where = f"attr_judgments[{j}].judgment"
            value = entry.get("judgment") if isinstance(entry, dict) else None
            if value is None or value == "":
                out.missing["empty judgment"] += 1
                continue
            if value not in JUDGMENT_MAP:
                raise DataError(path, line, where, f"must be ok, unsure or bad, got {value!r}")
            out.ratings.append(
                Rating(item_key(index, item.user_id, attr), rater, JUDGMENT_MAP[value], HUMAN, str(path), line)
            )
    return out


def read_stage1(
    items_path: str | Path, human: Sequence[str | Path]
) -> tuple[dict[int, Stage1Item], RatingSet, Alignment]:
    """The item file and annotators' task-1 files -> items, ratings (accepted/uncertain/rejected), alignment."""
    items = read_stage1_items(items_path)
    report = Alignment()
    ratings = merge_ratings([read_stage1_file(p, items, report) for p in human])
    return items, ratings, report
