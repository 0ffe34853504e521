"""What every tool format shares: the units a tool shows (one per rating item of the long format), the side each
answer was shown on, and the mapping of a tool's side-based answer back to tailorbench's canonical label.

A unit is one pairwise item, or one attribute of an attributes / relevance / A/B-rating item (rating item
`ID::KEY`), so a tool's project-wide labeling config can hold one control per question. Where a task type shows
two answers, the export draws per item (from a seed) whether they are swapped, so an import maps "left" / "answer
2" back to the answer it was, never to a position.

Exports are blind: what a tool sends an annotator's browser (Label Studio's task data, Argilla's record metadata,
Potato's data file) carries only an opaque reference per unit (`tb_ref`, `<project>-<n>`), never the swap, the
item id or the task; the mapping from each reference to its unit stays in a sidecar written beside the project,
`tailorbench-key.json`, which the importer reads (beside the export it is given or in a folder above it). For an
item made from a benchmark, whose answer A is the chosen one, the swap would tell an annotator which side the
benchmark prefers. Exports made before this carried the unit itself (`tb_unit`, `tb_swap`, ...): still read.
"""

from __future__ import annotations

import hashlib
import random
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.agreement.records import Label, Rating, RatingSet
from tailorbench.annotation.importer import read_import
from tailorbench.annotation.tasks import ATTR_SEP, JUDGMENTS, SCALE, task_type
from tailorbench.errors import DataError
from tailorbench.files import load_json, write_json_atomic
from tailorbench.personas import render_persona

#: the task types a tool export covers (the built-in ones)
TASK_NAMES = ("pairwise", "attributes", "relevance", "ab_rating")
#: a pairwise choice a tool config may add besides the two sides; mapped to an abstention and counted
TIE_WORDS = frozenset({"tie", "equal", "same", "both", "neither", "none", "no preference"})
#: the pairwise confidence scale
CONFIDENCE = (1, 2, 3)
#: the sidecar mapping each opaque reference to its unit (never sent to an annotator)
KEY_FILE = "tailorbench-key.json"
#: the one field of tailorbench's own a tool's task carries: an opaque reference
REF = "tb_ref"
#: what a key file says it is
KEY_FORMAT = "tailorbench-unit-key/1"


@dataclass(frozen=True)
class Unit:
    """One thing a tool asks about: `uid` is its rating item in the long format, `swap` whether the two answers
    are shown in the order (answer B, answer A) / (personalized, generic), `fields` what the tool displays."""

    uid: str
    item: str
    task: str
    swap: bool
    fields: dict[str, str]

    def meta(self) -> dict[str, Any]:
        """What a tool's task keeps so an import needs nothing but the tool's own export."""
        return {"tb_unit": self.uid, "tb_item": self.item, "tb_task": self.task, "tb_swap": self.swap}


def refs(units: list[Unit]) -> list[str]:
    """One opaque reference per unit, `<project>-<n>`: the project a hash of the unit ids (so two projects'
    references differ and one export made again gives the same ones), n the unit's position; nothing in it
    depends on an answer's side."""
    project = hashlib.sha256("\n".join(u.uid for u in units).encode()).hexdigest()[:10]
    return [f"{project}-{n}" for n in range(1, len(units) + 1)]


def write_key(out: Path, units: list[Unit], references: list[str]) -> Path:
    """The sidecar of an export: reference -> the unit's id, item, task and swap."""
    return write_json_atomic(out / KEY_FILE, {"format": KEY_FORMAT, "units": {
        ref: unit.meta() for ref, unit in zip(references, units)}})


UnitKey = dict[str, Unit]


def read_key(path: Path) -> UnitKey:
    """A key file -> reference -> unit; a damaged one is a DataError naming it."""
    data = load_json(path, dict, "a tailorbench unit key (a JSON object)")
    units = data.get("units")
    if data.get("format") != KEY_FORMAT or not isinstance(units, dict):
        raise DataError(path, None, "format", f"not a tailorbench unit key ({KEY_FORMAT})")
    out: UnitKey = {}
    for ref, meta in units.items():
        unit = unit_from_meta(meta) if isinstance(meta, dict) else "not an object"
        if isinstance(unit, str):
            raise DataError(path, None, f"units.{ref}", unit)
        out[str(ref)] = unit
    return out


def find_key(path: Path) -> UnitKey | None:
    """The unit key of an export: `tailorbench-key.json` in the export's folder (or the folder given) or in a
    folder above it; None when there is none."""
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.resolve().parents):
        candidate = folder / KEY_FILE
        if candidate.is_file():
            return read_key(candidate)
    return None


def is_own(meta: Mapping[str, Any]) -> bool:
    """Whether a tool's task is one tailorbench exported (a reference, or an older export's unit)."""
    return REF in meta or "tb_unit" in meta


def _conversation_text(turns: list[dict[str, str]]) -> str:
    return "\n".join(f"{t['role']}: {t['content']}" if t.get("role") else t["content"] for t in turns)


def units_from_items(path: str | Path, task: str, seed: int = 0) -> list[Unit]:
    """The units of an items file of task type `task` (read and checked by the annotation importer, so the same
    files import into tailorbench's own service), answer sides drawn per item with `seed`."""
    if task not in TASK_NAMES:
        raise DataError(path, None, None, f"task type {task!r} has no tool export; choose one of "
                                          f"{', '.join(TASK_NAMES)}")
    _, items = read_import(path, task_type(task))
    rng = random.Random(seed)
    out: list[Unit] = []
    for it in items:
        p = it.payload
        swap = rng.random() < 0.5 if task in ("pairwise", "ab_rating") else False
        persona = render_persona(p["persona"]) if p.get("persona") else ""
        if task == "pairwise":
            answers = [p["answer_a"], p["answer_b"]]
            shown = answers[::-1] if swap else answers
            out.append(Unit(it.ext_id, it.ext_id, task, swap, {"persona": persona, "question": p["question"],
                                                                "answer1": shown[0], "answer2": shown[1]}))
            continue
        base: dict[str, str]
        if task == "attributes":
            base = {"conversation": _conversation_text(p["conversation"])}
        elif task == "relevance":
            base = {"prompt": p["prompt"]}
        else:
            answers = [p["generic"], p["personalized"]]
            shown = answers[::-1] if swap else answers
            base = {"persona": persona, "prompt": p["prompt"], "answer1": shown[0], "answer2": shown[1]}
        for attr in p["attributes"]:
            uid = f"{it.ext_id}{ATTR_SEP}{attr['key']}"
            out.append(Unit(uid, it.ext_id, task, swap, {**base, "attribute": attr["text"]}))
    return out


def unit_from_meta(meta: Mapping[str, Any], key: UnitKey | None = None) -> Unit | str:
    """The unit of a tool's task: its reference looked up in the export's key, or (older exports, and the key
    file's own entries) the unit the task carries (`Unit.meta`); or why it cannot be read."""
    if REF in meta:
        if key is None:
            return (f"the task's unit is in the project's key file ({KEY_FILE}), which is not beside the export "
                    "nor in a folder above it: copy it there from the exported project")
        found = key.get(str(meta[REF]))
        return found if found is not None else f"{REF} {meta[REF]!r} is not in the key file ({KEY_FILE})"
    uid, task, swap = meta.get("tb_unit"), meta.get("tb_task"), meta.get("tb_swap")
    if not isinstance(uid, str) or not uid:
        return "no tailorbench unit id (tb_unit): not a task tailorbench exported"
    if task not in TASK_NAMES:
        return f"unknown task type (tb_task) {task!r}"
    if not isinstance(swap, bool):
        return f"tb_swap must be true or false, got {swap!r}"
    return Unit(uid, str(meta.get("tb_item") or uid.split(ATTR_SEP)[0]), str(task), swap, {})


# --- answers: side-based in the tool, canonical in tailorbench --------------------------------------------


class Unmappable(ValueError):
    """An answer that maps to no label of its task type (counted with file and line, never dropped)."""


class Tie(Exception):
    """A pairwise answer that picked neither side (a tie choice a tool's config added): an abstention."""


def canonical(unit: Unit, answer: Mapping[str, Any]) -> Label:
    """A side-based answer -> the canonical label: pairwise {"side": left|right|tie} -> A/B (through the
    recorded swap); attributes {"judgment"}; relevance {"relevant": yes|no} -> bool; A/B rating {"score": 1..5,
    answer 2 against answer 1} -> -2..2 for personalized vs generic (through the swap)."""
    if unit.task == "pairwise":
        side = str(answer.get("side", "")).strip().lower()
        if side in TIE_WORDS:
            raise Tie
        if side not in ("left", "right"):
            raise Unmappable(f"pairwise side must be left or right, got {answer.get('side')!r}")
        first = side == "left"
        return ("B" if first else "A") if unit.swap else ("A" if first else "B")
    if unit.task == "attributes":
        judgment = answer.get("judgment")
        if judgment not in JUDGMENTS:
            raise Unmappable(f"judgment must be one of {', '.join(JUDGMENTS)}, got {judgment!r}")
        return str(judgment)
    if unit.task == "relevance":
        relevant = str(answer.get("relevant", "")).strip().lower()
        if relevant not in ("yes", "no"):
            raise Unmappable(f"relevance must be yes or no, got {answer.get('relevant')!r}")
        return relevant == "yes"
    score = answer.get("score")
    if isinstance(score, str) and score.strip().isdigit():
        score = int(score)
    if isinstance(score, float) and score.is_integer():
        score = int(score)
    if not isinstance(score, int) or isinstance(score, bool) or not 1 <= score <= len(SCALE):
        raise Unmappable(f"A/B score must be 1..{len(SCALE)}, got {score!r}")
    return -(score - 3) if unit.swap else score - 3


def shown_answer(unit: Unit, label: Label) -> dict[str, Any]:
    """The inverse of `canonical`: a canonical label as the side-based answer a tool stores (predictions)."""
    if unit.task == "pairwise":
        if label not in ("A", "B"):
            raise Unmappable(f"pairwise label must be A or B (or chosen / rejected), got {label!r}")
        first = (label == "B") if unit.swap else (label == "A")
        return {"side": "left" if first else "right"}
    if unit.task == "attributes":
        return {"judgment": label}
    if unit.task == "relevance":
        return {"relevant": "yes" if label is True else "no"}
    if not isinstance(label, int) or isinstance(label, bool):
        raise Unmappable(f"A/B label must be an integer -2..2, got {label!r}")
    return {"score": (-label if unit.swap else label) + 3}


def prediction_label(unit: Unit, label: Label) -> Label:
    """A judge's label as given in the long format; pairwise `chosen` / `rejected` (run directories) are A / B,
    which holds for items imported from PairCase files (answer A = the source's chosen answer)."""
    if unit.task == "pairwise" and label in ("chosen", "rejected"):
        return "A" if label == "chosen" else "B"
    return label


# --- the import report ------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What a tool import read, kept apart: ratings, and every annotation that is not one, by reason."""

    tool: str
    sources: list[str] = field(default_factory=list)
    annotations: int = 0
    ratings: int = 0
    #: reason -> count: skipped, cancelled, discarded, draft, tie (abstention), empty, unmappable, ...
    not_rated: Counter[str] = field(default_factory=Counter)
    #: every row that could not be mapped: {path, line, reason}
    unmappable: list[dict[str, Any]] = field(default_factory=list)
    #: pairwise confidence given -> count (None: not given)
    confidence: Counter[str] = field(default_factory=Counter)
    #: seconds each rated annotation took, where the tool records it (Label Studio's `lead_time`)
    lead_time_s: list[float] = field(default_factory=list)
    #: what the reader could not tell from the file
    notes: list[str] = field(default_factory=list)
    #: a foreign export (not made by tailorbench): the mapping given and what was detected (`mapping.Shape`)
    mapping: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "sources": self.sources, "annotations": self.annotations,
                "ratings": self.ratings, "not_rated": dict(sorted(self.not_rated.items())),
                "unmappable": self.unmappable, "confidence": dict(sorted(self.confidence.items())),
                "lead_time_s": {"n": len(self.lead_time_s),
                                "median": statistics.median(self.lead_time_s) if self.lead_time_s else None},
                "notes": self.notes, **({"mapping": self.mapping} if self.mapping else {})}


class Collector:
    """Turns a tool's answers into ratings and counts everything else; one per import."""

    def __init__(self, tool: str) -> None:
        self.report = ImportReport(tool)
        self.ratings = RatingSet()
        self._seen: dict[tuple[str, str], str] = {}

    def source(self, path: str | Path) -> None:
        self.report.sources.append(str(path))
        self.ratings.sources.append(str(path))

    def count(self, reason: str) -> None:
        """An annotation that is no rating (skipped, cancelled, discarded, draft, empty, tie)."""
        self.report.annotations += 1
        self.report.not_rated[reason] += 1
        self.ratings.missing[reason] += 1

    def unmappable(self, path: str | Path, line: int | None, reason: str) -> None:
        self.report.annotations += 1
        self.report.not_rated["unmappable"] += 1
        self.ratings.missing["unmappable"] += 1
        self.report.unmappable.append({"path": str(path), "line": line, "reason": reason})

    def answer(self, unit: Unit | str, rater: str, answer: Mapping[str, Any], path: str | Path,
               line: int | None) -> None:
        """One annotator's answer to one unit (or why the unit is unreadable)."""
        if isinstance(unit, str):
            self.unmappable(path, line, unit)
            return
        if not rater:
            self.unmappable(path, line, "no annotator (rater) named")
            return
        try:
            label = canonical(unit, answer)
        except Tie:
            self.count("tie (abstention)")
            return
        except Unmappable as exc:
            self.unmappable(path, line, f"unit {unit.uid!r}: {exc}")
            return
        if unit.task == "pairwise":
            conf = answer.get("confidence")
            given = "not given" if conf is None else str(conf) if conf in CONFIDENCE else "outside 1-3"
            self.report.confidence[given] += 1
        self.rate(unit.uid, rater, label, path, line)

    def rate(self, item: str, rater: str, label: Label, path: str | Path, line: int | None) -> None:
        """One rating; a rater rating an item twice is unmappable, naming the first place."""
        where = f"{path}:{line}" if line is not None else str(path)
        prev = self._seen.get((item, rater))
        if prev is not None:
            self.unmappable(path, line, f"rater {rater!r} already rated {item!r} at {prev}")
            return
        self._seen[item, rater] = where
        self.report.annotations += 1
        self.report.ratings += 1
        self.ratings.ratings.append(Rating(item, rater, label, "human", str(path), line))


def ratings_of(predictions: Iterable[Rating], units: list[Unit]) -> tuple[dict[str, list[tuple[str, Label]]], int]:
    """Judge verdicts (long-format ratings) by unit id: (judge id, canonical label) for export as predictions, and
    how many verdicts are of no exported unit (a run that judged more cases than are exported): counted, not an
    error, since exporting a sample of a run's cases is the usual case."""
    by_uid = {u.uid for u in units}
    out: dict[str, list[tuple[str, Label]]] = {}
    others = 0
    for r in predictions:
        if r.item not in by_uid:
            others += 1
            continue
        out.setdefault(r.item, []).append((r.rater, r.label))
    return out, others
