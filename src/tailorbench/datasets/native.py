"""Native JSONL: one PairCase per line (`case.model_dump_json()`), UTF-8. The format other tools write
(the construction pipeline, tiering) and the one `tailor data convert` produces.

Split and tier names: PersonaFeedback's (specific / general; easy / medium / hard) unless a sidecar file
`<name>.layout.json` next to `<name>.jsonl` declares others, in report order:
`{"splits": ["formal", "casual"], "tiers": ["low", "high"], "difficulty": ["high", "low"]}` (`difficulty`, easiest
first, is optional). A row whose split or tier is not declared is an error naming its line and field (a typo such
as `Generals` never becomes a split of its own).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.layouts import Layout, check_declaration, register_layout
from tailorbench.datasets.rows import InvalidRows, first_jsonl_row, pair_hash, read_jsonl, remember_digest
from tailorbench.errors import ConfigError, DataError
from tailorbench.files import load_bytes, parse_json, write_jsonl_atomic, write_text_atomic
from tailorbench.personas import check_persona_depth, normalise_persona
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, PairCase

_REQUIRED = ("split", "tier", "user_id", "question", "chosen", "rejected")


def looks_native(first_row: dict[str, Any]) -> bool:
    """A native row carries `split` or `tier` (PersonaFeedback tier files carry neither): the reader then names
    whichever required field a row lacks, the first row included."""
    return "split" in first_row or "tier" in first_row


def read_native(path: Path, invalid: InvalidRows, splits: tuple[str, ...] = DEFAULT_SPLITS,
                tiers: tuple[str, ...] = DEFAULT_TIERS) -> Iterator[PairCase]:
    """PairCases from native JSONL whose split and tier are among `splits` and `tiers`. Explicit ids must be
    unique; rows without one get `split/tier/stem:line`."""
    seen: dict[str, int] = {}
    personas = _PersonaCache()
    names = {"split": frozenset(splits), "tier": frozenset(tiers)}
    for line, row in read_jsonl(path, invalid):
        try:
            case = _row_to_case(row, path, line, personas, names)
            if case.id in seen:
                raise DataError(path, line, "id", f"duplicate id {case.id!r} (first at {path}:{seen[case.id]})")
            seen[case.id] = line
            yield case
        except DataError as error:
            invalid.handle(error)


class _PersonaCache:
    """Rows of one user usually repeat the same profile: normalise it once and share one object, which
    also lets the runner render it once."""

    def __init__(self) -> None:
        self._by_user: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    def normalised(self, user_id: str, raw: dict[str, Any]) -> dict[str, Any]:
        hit = self._by_user.get(user_id)
        if hit is not None and hit[0] == raw:
            return hit[1]
        normalised = normalise_persona(raw)[0]
        self._by_user[user_id] = (raw, normalised)
        return normalised


def _row_to_case(row: dict[str, Any], path: Path, line: int, personas: _PersonaCache,
                 names: Mapping[str, frozenset[str]]) -> PairCase:
    for key in _REQUIRED:
        if key not in row or row[key] is None:
            raise DataError(path, line, key, "missing required field")
    for key, declared in names.items():
        value = row[key]
        if type(value) is str and value not in declared:
            raise DataError(path, line, key, f"unknown {key} {value!r} (declared: {', '.join(sorted(declared))}; "
                                             f"declare others in {_sidecar(path).name})")
    user = row["user_id"]
    if type(user) is not str:
        if isinstance(user, bool) or not isinstance(user, int):
            raise DataError(path, line, "user_id", f"expected text or an integer, got {type(user).__name__}")
        row["user_id"] = user = str(user)  # the row is ours (fresh from the parser): edit in place
    if not user.strip():
        raise DataError(path, line, "user_id", "must not be empty")
    if row.get("id") in (None, ""):
        row["id"] = f"{row['split']}/{row['tier']}/{path.stem}:{line}"
    persona = row.get("persona")
    if persona is None:
        persona = {}
    elif not isinstance(persona, dict):
        raise DataError(path, line, "persona", f"expected a JSON object, got {type(persona).__name__}")
    check_persona_depth(persona, path, line)
    row["persona"] = personas.normalised(row["user_id"], persona)
    try:
        case = PairCase.model_validate(row)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise DataError(path, line, field, first["msg"]) from None
    if case.chosen == case.rejected:
        raise DataError(path, line, "rejected", "identical to 'chosen': not a pair")
    if "pair_hash" not in case.meta:
        case.meta["pair_hash"] = pair_hash(case.user_id, case.question, case.chosen, case.rejected)
    return case


def write_native(cases: Iterable[PairCase], path: Path) -> int:
    """Write cases atomically (temp file + rename) so a failure never leaves a half-written benchmark."""
    return write_jsonl_atomic(path, (case.model_dump_json() for case in cases))


def write_benchmark(benchmark: Benchmark, path: Path) -> int:
    """The benchmark's cases as native JSONL and, when its split and tier names are not PersonaFeedback's, the
    sidecar declaring them (`<name>.layout.json`), so the file reads back with the names it was written with
    (what `tailor data convert` of a PrefEval, PRISM ... benchmark needs)."""
    n = write_native(benchmark.cases, path)
    names = benchmark.names()
    if names != {"splits": list(DEFAULT_SPLITS), "tiers": list(DEFAULT_TIERS)}:
        write_text_atomic(_sidecar(path), json.dumps(names, ensure_ascii=False) + "\n")
    return n


def declared_names(path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The split and tier names a JSONL file declares: its sidecar's, else PersonaFeedback's (what annotation
    imports and `tailor tiers` check item files against)."""
    declared, _ = NativeLayout().declared(path)
    return tuple(declared.splits), tuple(declared.tiers)


def _sidecar(path: Path) -> Path:
    name = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return path.with_name(f"{name}.layout.json")


class _Declared(Layout):
    """The native layout with the names one file's sidecar declares (checked like any layout's)."""

    name = "native"

    def __init__(self, splits: tuple[str, ...], tiers: tuple[str, ...], difficulty: tuple[str, ...] | None) -> None:
        self.splits, self.tiers, self.difficulty = splits, tiers, difficulty  # type: ignore[misc]


def _names(value: Any, file: Path, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(file, None, key, "expected a list of names")
    return tuple(value)


@register_layout
class NativeLayout(Layout):
    """Native PairCase JSONL (any file whose first row carries `split` or `tier`)."""

    labels: ClassVar[str] = "not stated"
    chosen_is: ClassVar[str] = (
        "the answer the file marks as chosen; native JSONL does not say who set the labels"
    )

    name = "native"
    expects = ("a PairCase JSONL file (rows with id, split, tier, user_id, persona, question, chosen, rejected; "
               "other split/tier names declared in <name>.layout.json)")
    priority = 90

    def detect(self, path: Path) -> bool:
        if not path.is_file():
            return False
        row = first_jsonl_row(path)
        return row is None or looks_native(row)  # an unreadable first row: the reader names what is wrong

    def declared(self, path: Path) -> tuple[Layout, list[Path]]:
        """This file's declaration: its sidecar's, else the layout's own (PersonaFeedback's names)."""
        sidecar = _sidecar(path)
        if not sidecar.is_file():
            return self, []
        raw = load_bytes(sidecar, "a layout declaration (a JSON object)")
        remember_digest(sidecar, raw)
        spec = parse_json(raw, sidecar, None, dict, 'an object with "splits" and "tiers" lists')
        if not {"splits", "tiers"} <= spec.keys():
            raise DataError(sidecar, None, None, 'expected an object with "splits" and "tiers" lists')
        difficulty = spec.get("difficulty")
        declared = _Declared(_names(spec["splits"], sidecar, "splits"), _names(spec["tiers"], sidecar, "tiers"),
                             None if difficulty is None else _names(difficulty, sidecar, "difficulty"))
        try:
            check_declaration(declared)
        except ConfigError as exc:
            raise DataError(sidecar, None, None, str(exc)) from None
        return declared, [sidecar]

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        declared, _ = self.declared(path)
        return read_native(path, invalid, declared.splits, declared.tiers)

    def load(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Benchmark:
        declared, sidecars = self.declared(path)
        cases = list(read_native(path, invalid, declared.splits, declared.tiers))
        return Benchmark(spec, self.name, cases, invalid, files=[path, *sidecars], splits=declared.splits,
                         tiers=declared.tiers, difficulty=declared.difficulty)
