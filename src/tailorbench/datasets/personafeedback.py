"""Readers for the PersonaFeedback layouts seen in the wild.

- hub: `data/{general,specific,spedific}/{easy,medium,mid,hard}.jsonl` + `persona/all_personas.jsonl`;
  `user_id` is a name key or the 1-based line number of the persona file.
- release mirror: `{general,specific}_{easy,mid,medium,hard}.jsonl` + `persona_all/<user_id>.json`.

Rows keep their file order; repeated and label-flipped rows stay separate cases (the loader counts them). Both
layouts declare PersonaFeedback's splits (specific, general) and tiers (easy, medium, hard), the defaults of
`datasets/layouts.Layout`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.layouts import Layout, register_layout
from tailorbench.datasets.rows import InvalidRows, pair_hash, read_jsonl, remember_digest, require_text
from tailorbench.errors import DataError
from tailorbench.personas import check_persona_depth, normalise_persona
from tailorbench.schema import PairCase

_MIRROR_FILE = re.compile(r"^(general|specific|spedific)_(easy|mid|medium|hard)\.jsonl$", re.IGNORECASE)


class PersonaIndex:
    """Profiles addressable by name key and by 1-based line number (hub) or file stem (mirror)."""

    def __init__(self) -> None:
        self.by_key: dict[str, dict[str, Any]] = {}
        self.by_line: dict[int, str] = {}
        self.renamed_keys = 0
        self.used: set[str] = set()
        self.files: list[Path] = []
        #: name key -> `file:line` where it was read
        self.where: dict[str, str] = {}

    def add(self, key: str, profile: dict[str, Any], line: int | None = None, file: Path | None = None) -> None:
        """Add a profile under its name key (and its line, hub); `file` (with `line`) is where it was read, for
        the errors: a profile nested too deeply, or a name key given twice."""
        where = file if file is not None else Path("persona")
        check_persona_depth(profile, where, line)
        if key in self.by_key and file is not None:
            first = self.where.get(key)
            raise DataError(where, line, "user_id", f"duplicate persona id {key!r}"
                            + (f" (first at {first})" if first else ""))
        self.where[key] = f"{where}:{line}" if line is not None else str(where)
        normalised, renamed = normalise_persona(profile)
        self.renamed_keys += renamed
        self.by_key[key] = normalised
        if line is not None:
            self.by_line[line] = key

    def resolve(self, user_id: Any) -> str | None:
        """The name key of a row's user_id: a name key first, then a line number."""
        text = str(user_id).strip()
        if text in self.by_key:
            return text
        if isinstance(user_id, int) or text.isdigit():
            return self.by_line.get(int(text))
        return None


def is_hub_layout(path: Path) -> bool:
    return (path / "data").is_dir() and (path / "persona" / "all_personas.jsonl").is_file()


def is_mirror_layout(path: Path) -> bool:
    return (path / "persona_all").is_dir() and any(_MIRROR_FILE.match(p.name) for p in path.glob("*.jsonl"))


def _unwrap_hub_persona(row: dict[str, Any], line: int) -> tuple[str, dict[str, Any]]:
    """A hub persona line is `{user_id|id: .., ...profile}`, `{name_key: {profile}}`, or a bare profile."""
    for key in ("user_id", "id", "uid"):
        if key in row and isinstance(row[key], (str, int)):
            profile = {k: v for k, v in row.items() if k != key}
            if set(profile) == {"persona"} and isinstance(profile["persona"], dict):
                profile = profile["persona"]
            return str(row[key]), profile
    if len(row) == 1:
        (key, value), = row.items()
        if isinstance(value, dict):
            return str(key), value
    return str(line), row


def load_hub_personas(path: Path, invalid: InvalidRows) -> PersonaIndex:
    index = PersonaIndex()
    file = path / "persona" / "all_personas.jsonl"
    index.files.append(file)
    for line, row in read_jsonl(file, invalid):
        key, profile = _unwrap_hub_persona(row, line)
        try:
            index.add(key, profile, line=line, file=file)
        except DataError as error:
            invalid.handle(error)
    return index


def load_mirror_personas(path: Path, invalid: InvalidRows) -> PersonaIndex:
    index = PersonaIndex()
    for file in sorted((path / "persona_all").glob("*.json")):
        index.files.append(file)
        try:
            raw = file.read_bytes()
            remember_digest(file, raw)
            profile = json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            invalid.handle(DataError(file, None, None, f"not valid UTF-8 (byte {exc.start}): wrong encoding?"))
            continue
        except json.JSONDecodeError as exc:
            invalid.handle(DataError(file, exc.lineno, None, f"malformed JSON: {exc.msg}"))
            continue
        except RecursionError:
            invalid.handle(DataError(file, 1, "persona", "nested too deeply to be a persona profile"))
            continue
        if not isinstance(profile, dict):
            invalid.handle(DataError(file, 1, None, "a persona file must hold a JSON object"))
            continue
        try:
            index.add(file.stem, profile, line=None, file=file)
        except DataError as error:
            invalid.handle(error)
    return index


def hub_case_files(path: Path) -> Iterator[tuple[Path, str, str]]:
    for split_dir in sorted(p for p in (path / "data").iterdir() if p.is_dir()):
        split = HUB.split_name(split_dir.name)
        if split is None:
            continue
        for file in sorted(split_dir.glob("*.jsonl")):
            tier = HUB.tier_name(file.stem)
            if tier is not None:
                yield file, split, tier


def mirror_case_files(path: Path) -> Iterator[tuple[Path, str, str]]:
    for file in sorted(path.glob("*.jsonl")):
        match = _MIRROR_FILE.match(file.name)
        if match:
            split, tier = MIRROR.split_name(match.group(1)), MIRROR.tier_name(match.group(2))
            assert split is not None and tier is not None
            yield file, split, tier


def read_pf_rows(
    file: Path, split: str, tier: str, personas: PersonaIndex, invalid: InvalidRows,
    seen: dict[str, str] | None = None,
) -> Iterator[PairCase]:
    """PairCases of one tier file. `reject` and `rejected` are both accepted. `seen` (case id -> `file:line`,
    shared by every file of a benchmark) refuses an id given twice, naming both places."""
    id_prefix = f"{split}/{tier}/{file.stem}:"
    seen = {} if seen is None else seen
    for line, row in read_jsonl(file, invalid):
        try:
            case = _row_to_case(row, file, line, split, tier, personas, id_prefix)
            first = seen.get(case.id)
            if first is not None:
                raise DataError(file, line, "id", f"duplicate id {case.id!r} (first at {first})")
            seen[case.id] = f"{file}:{line}"
            yield case
        except DataError as error:
            invalid.handle(error)


def _row_to_case(
    row: dict[str, Any], file: Path, line: int, split: str, tier: str, personas: PersonaIndex, id_prefix: str
) -> PairCase:
    rejected_key = "rejected" if "rejected" in row else "reject"
    if "user_id" not in row:
        raise DataError(file, line, "user_id", "missing required field")
    question = require_text(row, "question", file, line)
    chosen = require_text(row, "chosen", file, line)
    rejected = require_text(row, rejected_key, file, line)
    if chosen == rejected:
        raise DataError(file, line, rejected_key, "identical to 'chosen': not a pair")
    key = personas.resolve(row["user_id"])
    if key is None:
        raise DataError(file, line, "user_id", f"unknown persona id {row['user_id']!r}")
    personas.used.add(key)
    meta: dict[str, Any] = {"pair_hash": pair_hash(key, question, chosen, rejected)}
    if str(row["user_id"]) != key:
        meta["source_user_id"] = row["user_id"]
    return PairCase(
        id=str(row["id"]) if row.get("id") not in (None, "") else f"{id_prefix}{line}",
        split=split,
        tier=tier,
        user_id=key,
        persona=personas.by_key[key],
        question=question,
        chosen=chosen,
        rejected=rejected,
        meta=meta,
    )


class _PersonaFeedbackLayout(Layout):
    """Tier files named by split and tier, plus a persona store; `user_id` resolves against the store. A
    variant names its persona loader, its case-file finder and its recogniser."""

    labels: ClassVar[str] = "human-labelled"
    chosen_is: ClassVar[str] = (
        "the answer the human annotators preferred (PersonaFeedback: the majority vote of its annotators on "
        "the pair)"
    )

    load_personas: Callable[[Path, InvalidRows], PersonaIndex]
    find_case_files: Callable[[Path], Iterator[tuple[Path, str, str]]]
    recognises: Callable[[Path], bool]

    def personas(self, path: Path, invalid: InvalidRows) -> PersonaIndex:
        return self.load_personas(path, invalid)

    def case_files(self, path: Path) -> Iterator[tuple[Path, str, str]]:
        return self.find_case_files(path)

    def detect(self, path: Path) -> bool:
        return path.is_dir() and self.recognises(path)

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        yield from self.load(str(path), path, invalid, options).cases

    def load(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Benchmark:
        personas = self.personas(path, invalid)
        files = list(self.case_files(path))
        seen: dict[str, str] = {}  # case ids of every file: one id twice is an error naming both places
        cases = [case for f, s, t in files for case in read_pf_rows(f, s, t, personas, invalid, seen)]
        if not cases and not invalid.rows:
            raise DataError(path, None, None, "no case files found")
        unused = sorted(set(personas.by_key) - personas.used)
        sources = [f for f, _, _ in files] + personas.files
        return self.benchmark(spec, cases, invalid, personas_total=len(personas.by_key), personas_unused=unused,
                              persona_keys_renamed=personas.renamed_keys, files=sources)


@register_layout
class HubLayout(_PersonaFeedbackLayout):
    """PersonaFeedback as on the Hugging Face hub."""

    name = "hub"
    expects = "a directory with data/<split>/<tier>.jsonl and persona/all_personas.jsonl"
    priority = 10
    load_personas = staticmethod(load_hub_personas)
    find_case_files = staticmethod(hub_case_files)
    recognises = staticmethod(is_hub_layout)


@register_layout
class MirrorLayout(_PersonaFeedbackLayout):
    """PersonaFeedback's release mirror."""

    name = "mirror"
    expects = "a directory with <split>_<tier>.jsonl files and persona_all/<user_id>.json"
    priority = 20
    load_personas = staticmethod(load_mirror_personas)
    find_case_files = staticmethod(mirror_case_files)
    recognises = staticmethod(is_mirror_layout)


HUB = HubLayout()
MIRROR = MirrorLayout()
