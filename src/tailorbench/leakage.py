"""What a model was fitted on, as content hashes, and how much of a benchmark overlaps it.

`tailor train-rm` writes `training_content.json` into its checkpoint: the sha256 of each training persona and of
each training pair (question, chosen, rejected). Hashes are of content, never of user ids, which differ between
layouts (the hub numbers personas by line, the release mirror names them). Text is normalised first (Unicode NFC,
surrounding white space stripped); a persona is hashed in one canonical JSON form (keys normalised as the readers
do, sorted; every string normalised), so the hub and mirror copies of one persona hash the same.

Any judge can declare its training data the same way: a method `training_content()` returning a
`TrainingContent` (or None), or a `training_data` entry in its `describe()` whose `content` names such a file.
The runner classifies every planned case against it (`overlap`) before any work: `in-training` (its pair, in
either label order, was a training pair), `persona-seen` (only its persona was in training) or `unseen`.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.errors import DataError
from tailorbench.files import Output, as_output
from tailorbench.personas import normalise_persona
from tailorbench.registry import Registry

#: the file in a checkpoint directory
CONTENT_FILE = "training_content.json"
#: version of the hash recipe below; files with another version are not compared (their hashes differ)
RECIPE = 1
RECIPE_TEXT = ("sha256 of UTF-8 text after Unicode NFC and strip; persona: canonical JSON (keys normalised as the "
               "readers do, sort_keys, separators ',' ':', ensure_ascii false, every string NFC + strip); pair: "
               "question, chosen, rejected joined by U+001F")
#: the classes of a case against a judge's training data, in report order
CLASSES = ("unseen", "persona-seen", "in-training")


def norm(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, str):
        return norm(value)
    if isinstance(value, dict):
        return {norm(str(k)): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def persona_hash(persona: dict[str, Any]) -> str | None:
    """The hash of a persona object (None for an empty one: nothing to recognise)."""
    if not persona:
        return None
    normalised, _ = normalise_persona(persona)
    return _sha(json.dumps(_canonical(normalised), sort_keys=True, ensure_ascii=False, separators=(",", ":")))


def pair_hash(question: str, chosen: str, rejected: str) -> str:
    return _sha("\x1f".join((norm(question), norm(chosen), norm(rejected))))


@dataclass
class TrainingContent:
    """Hashes of what a model was fitted on, and where they came from."""

    personas: set[str] = field(default_factory=set)
    pairs: set[str] = field(default_factory=set)
    source: str = ""
    recipe: int = RECIPE
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_cases(cls, cases: Iterable[Any], source: str = "", **meta: Any) -> TrainingContent:
        """From PairCase-like records (persona, question, chosen, rejected)."""
        personas: set[str] = set()
        pairs: set[str] = set()
        memo: dict[int, str | None] = {}  # a user's one profile object is shared by all their cases
        for case in cases:
            key = id(case.persona)
            if key not in memo:
                memo[key] = persona_hash(case.persona)
            if memo[key]:
                personas.add(str(memo[key]))
            pairs.add(pair_hash(case.question, case.chosen, case.rejected))
        return cls(personas, pairs, source, RECIPE, dict(meta))

    def summary(self) -> dict[str, Any]:
        """What a judge's description declares (no hashes)."""
        return {"content": self.source, "recipe": self.recipe, "personas": len(self.personas),
                "pairs": len(self.pairs), **self.meta}

    def write(self, directory: Output | str | Path) -> Path:
        """CONTENT_FILE in a checkpoint folder: the claimed folder output of the verb that trained it, or a path
        of a folder (only that file is written there)."""
        payload = {"recipe": self.recipe, "recipe_text": RECIPE_TEXT, **self.meta,
                   "counts": {"personas": len(self.personas), "pairs": len(self.pairs)},
                   "personas": sorted(self.personas), "pairs": sorted(self.pairs)}
        return as_output(directory, name=CONTENT_FILE).write_text(
            None, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")

    @classmethod
    def read(cls, path: Path) -> TrainingContent:
        from tailorbench.files import load_json

        try:
            data = load_json(path, dict, "a JSON object")
        except DataError as exc:
            what = ("malformed training content" if exc.line is not None
                    else "training content declared by the judge cannot be read")
            raise DataError(exc.path, exc.line, exc.field, f"{what}: {exc.message}") from None
        for key in ("personas", "pairs"):
            if not isinstance(data.get(key), list):
                raise DataError(path, None, key, "expected a list of hashes")
        meta = {k: v for k, v in data.items()
                if k not in ("personas", "pairs", "recipe", "recipe_text", "counts")}
        return cls(set(map(str, data["personas"])), set(map(str, data["pairs"])), str(path),
                   int(data.get("recipe", 0)), meta)


def read_dir(directory: str | Path) -> TrainingContent | None:
    """The training content a checkpoint directory carries, or None."""
    path = Path(directory) / CONTENT_FILE
    return TrainingContent.read(path) if path.is_file() else None


#: who rebuilds the training content of a checkpoint written before `CONTENT_FILE` existed, by trainer
#: (`tailor train-rm`'s is `train/content.py`): a lower layer reaches the trainer through this registry
RECONSTRUCTORS: Registry[Callable[[Path], tuple[TrainingContent | None, str | None]]] = Registry(
    "training-content reconstructor", "tailorbench.reconstructors", lazy={"train-rm": "tailorbench.train.content"})


def reconstruct(directory: str | Path) -> tuple[TrainingContent | None, str | None]:
    """For a `tailor train-rm` checkpoint written before training_content.json existed: its training pairs
    rebuilt from its train_config.yaml. Returns (content, None), or (None, why not)."""
    return RECONSTRUCTORS.get("train-rm")(Path(directory))


def judge_content(judge: Any) -> TrainingContent | None:
    """The training data a judge declares: its `training_content()`, else the file its description names."""
    method = getattr(judge, "training_content", None)
    if callable(method):
        content = method()
        if content is not None:
            return content if isinstance(content, TrainingContent) else None
    try:
        declared = judge.describe().get("training_data")
    except AttributeError:
        return None
    if isinstance(declared, dict) and declared.get("content"):
        path = Path(str(declared["content"]))
        return TrainingContent.read(path if path.name == CONTENT_FILE or path.is_file() else path / CONTENT_FILE)
    return None


def overlap(content: TrainingContent, cases: Sequence[Any]) -> dict[str, Any]:
    """Each case's class against the training content: the block the manifest records (`training_overlap`).
    `cases` maps case id -> class for the cases that are not unseen; `swapped` counts in-training cases whose
    training pair had the labels the other way round."""
    if content.recipe != RECIPE:
        return {"source": content.source, "recipe": content.recipe, "comparable": False,
                "counts": {}, "cases": {}, "swapped": 0,
                "note": f"training content uses hash recipe {content.recipe}, this version {RECIPE}: not compared"}
    classes: dict[str, str] = {}
    memo: dict[int, str | None] = {}
    swapped = 0
    for case in cases:
        if pair_hash(case.question, case.chosen, case.rejected) in content.pairs:
            classes[case.id] = "in-training"
            continue
        if pair_hash(case.question, case.rejected, case.chosen) in content.pairs:
            classes[case.id] = "in-training"
            swapped += 1
            continue
        key = id(case.persona)
        if key not in memo:
            memo[key] = persona_hash(case.persona)
        if memo[key] is not None and memo[key] in content.personas:
            classes[case.id] = "persona-seen"
    counts = Counter(classes.values())
    return {"source": content.source, "recipe": RECIPE, "comparable": True,
            "training_pairs": len(content.pairs), "training_personas": len(content.personas),
            "counts": {"unseen": len(cases) - len(classes), "persona-seen": counts["persona-seen"],
                       "in-training": counts["in-training"]},
            "swapped": swapped, "cases": classes}


def describe_overlap(block: dict[str, Any], judge: str) -> str | None:
    """The line printed before the work (None when nothing overlaps)."""
    counts = block.get("counts") or {}
    if not block.get("comparable", True):
        return f"{judge}: {block.get('note')}"
    seen, persona = counts.get("in-training", 0), counts.get("persona-seen", 0)
    if not seen and not persona:
        return None
    total = sum(counts.values())
    return (f"{judge} was trained on part of this data: {seen} of {total} cases are training pairs (in-training"
            + (f", {block.get('swapped')} with the labels swapped" if block.get("swapped") else "")
            + f"), {persona} more share a training persona (persona-seen), {counts.get('unseen', 0)} are unseen; "
            f"they are reported as separate rows (training data: {block.get('source')})")
