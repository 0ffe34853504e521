"""Native JSONL: one PairCase per line (`case.model_dump_json()`), UTF-8. The format other tools write
(the construction pipeline, tiering) and the one `tailor data convert` produces."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tailorbench.datasets.rows import InvalidRows, pair_hash, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import write_jsonl_atomic
from tailorbench.personas import check_persona_depth, normalise_persona
from tailorbench.schema import PairCase

_REQUIRED = ("split", "tier", "user_id", "question", "chosen", "rejected")


def looks_native(first_row: dict[str, Any]) -> bool:
    """A native row carries `split` or `tier` (PersonaFeedback tier files carry neither): the reader then names
    whichever required field a row lacks, the first row included."""
    return "split" in first_row or "tier" in first_row


def read_native(path: Path, invalid: InvalidRows) -> Iterator[PairCase]:
    """PairCases from native JSONL. Explicit ids must be unique; rows without one get `split/tier/stem:line`."""
    seen: dict[str, int] = {}
    personas = _PersonaCache()
    for line, row in read_jsonl(path, invalid):
        try:
            case = _row_to_case(row, path, line, personas)
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


def _row_to_case(row: dict[str, Any], path: Path, line: int, personas: _PersonaCache) -> PairCase:
    for key in _REQUIRED:
        if key not in row or row[key] is None:
            raise DataError(path, line, key, "missing required field")
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


def first_row(path: Path) -> dict[str, Any] | None:
    """The first JSON object of a file, for layout detection (None if unreadable: the reader reports why)."""
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    row = json.loads(raw.decode("utf-8-sig"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    return None
                return row if isinstance(row, dict) else None
    return None
