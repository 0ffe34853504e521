"""Typed records that flow between tailorbench's parts (see docs/architecture.md).

PairCase is the unit of every pairwise benchmark: `chosen` is the human-preferred answer. Only the runner
decides which answer is shown as A and which as B; an `order` names that decision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from tailorbench.errors import DataError
from tailorbench.runlog import RunFile, read_run_file

#: one chat message, `{"role": ..., "content": ...}` (what prompts render and every model backend takes)
Message = dict[str, str]

Choice = Literal["A", "B"]
#: "AB": chosen shown as A; "BA": chosen shown as B.
Order = Literal["AB", "BA"]
#: ok: a valid A/B pick; abstain: the judge declined (e.g. equal lengths or equal scores);
#: invalid: the judge answered but its output could not be parsed; failed: the call itself failed.
VerdictStatus = Literal["ok", "abstain", "invalid", "failed"]

#: PersonaFeedback's split and tier names, in report order: what a benchmark layout declares unless it declares its
#: own (`datasets/layouts.py`). A case's split and tier are plain names, checked against its layout's declaration.
DEFAULT_SPLITS: tuple[str, ...] = ("specific", "general")
DEFAULT_TIERS: tuple[str, ...] = ("easy", "medium", "hard")
ORDERS: tuple[Order, ...] = ("AB", "BA")
#: characters an id may not hold: C0 and C1 control characters (NUL, escape, newline ...), which a terminal or a
#: report would print raw
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def id_problem(value: str) -> str | None:
    """Why `value` cannot be an id (a case id, a user id, an item id), or None: a control character."""
    bad = _CONTROL.search(value)
    if bad is None:
        return None
    return f"holds the control character U+{ord(bad.group()):04X} at position {bad.start() + 1}: not allowed in an id"


class Persona(BaseModel):
    """A user's explicit profile: nested sections of free-form values, keys normalised by personas.py."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    profile: dict[str, Any]


class PairCase(BaseModel):
    """One pairwise case: which of two answers fits this person better (`chosen` is the human choice)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    #: names the case's layout declares (PersonaFeedback: specific/general, easy/medium/hard)
    split: str
    tier: str
    user_id: str
    persona: dict[str, Any] = Field(default_factory=dict)
    question: str
    chosen: str
    rejected: str
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("persona", "meta", mode="plain")
    @classmethod
    def _mapping_kept_as_is(cls, value: Any) -> dict[str, Any]:
        """Keep the caller's dict (no copy): a user's one profile object is shared by all their cases, so
        it is rendered once and costs no memory per case."""
        if not isinstance(value, dict):
            raise ValueError("expected a JSON object")
        return value

    @field_validator("id", "user_id", "split", "tier")
    @classmethod
    def _no_control_characters(cls, value: str) -> str:
        problem = id_problem(value)
        if problem is not None:
            raise PydanticCustomError("control_character", problem)
        return value

    @field_validator("split", "tier", "question", "chosen", "rejected")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


def in_declared_order(declared: Sequence[str], present: Iterable[str]) -> list[str]:
    """The declared names in their order, then any other name of `present` in order of first appearance (a
    report never drops a cell because its name was not declared)."""
    known = set(declared)
    extra = [name for name in dict.fromkeys(present) if name not in known]
    return [*declared, *extra]


@dataclass(frozen=True, slots=True)
class JudgeInput:
    """What a judge sees for one case in one order: no labels, only positions A and B. A plain dataclass:
    the runner builds one per verdict, so it must cost next to nothing."""

    case_id: str
    setting: str
    question: str
    answer_a: str
    answer_b: str
    #: rendered persona text (persona setting), retrieved context (rag), or None (none setting)
    context: str | None = None
    persona: dict[str, Any] | None = None
    language: str = "en"


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None


class Verdict(BaseModel):
    """A judge's answer for one JudgeInput. Parse failures are `invalid`, never folded into ties."""

    choice: Choice | None = None
    status: VerdictStatus = "ok"
    scores: dict[str, float] | None = None
    raw: str | None = None
    error: str | None = None
    latency_s: float | None = None
    usage: Usage | None = None
    truncated: bool = False
    cached: bool = False


class Prediction(RunFile):
    """One line of predictions.jsonl: one case x setting x order. Carries what metrics need, so a run
    directory alone reproduces every reported number. Part of the run log (`runlog`): read strictly, with the
    run format's `format_version`."""

    case_id: str
    judge: str
    setting: str
    order: Order
    choice: Choice | None
    correct: bool
    status: VerdictStatus
    split: str
    tier: str
    user_id: str
    len_chosen: int
    len_rejected: int
    scores: dict[str, float] | None = None
    raw: str | None = None
    error: str | None = None
    latency_s: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    truncated: bool = False
    cached: bool = False


class RunManifest(RunFile):
    """manifest.json of a run directory: everything needed to reproduce and to audit the run. Part of the run log
    (`runlog`): written from this model, read strictly, with the run format's `format_version`."""

    tailorbench_version: str
    created_at: str
    judge: str
    setting: str
    data: str
    dataset_fingerprint: str
    seed: int
    orders: Literal["both", "random", "authors"]
    config: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    data_stats: dict[str, Any] = Field(default_factory=dict)
    n_cases: int = 0
    user_attributes: dict[str, dict[str, str]] = Field(default_factory=dict)
    #: case id -> `repeated` / `contradicted` for the judged cases another tier of the data also holds, with the
    #: same label or with the labels swapped (`datasets.pairs.tier_overlap`; cases unique to their tier are left
    #: out); results.json splits each tier's accuracy by it
    tier_overlap: dict[str, str] = Field(default_factory=dict)
    #: running (a process holds run.lock; when none does, the run was killed: reported `interrupted`), finished,
    #: interrupted (Ctrl-C), stopped (an error ended it: `error` says which)
    status: Literal["running", "finished", "interrupted", "stopped"] = "running"
    error: str | None = None


#: the keys every prediction line holds (a line without one is not a prediction: older runs and tools that
#: write predictions may leave the other fields of `Prediction` out)
PREDICTION_KEYS = ("case_id", "order", "choice")


def check_fields(model: type[BaseModel], path: Path, number: int | None, row: Mapping[str, Any], what: str) -> None:
    """Each field of `model` that `row` holds has that field's type, checked strictly (no bool as int, no number
    as text); a DataError naming file, line and field otherwise, ending in `: not a {what}`. Fields may be
    missing (older runs and other tools leave optional ones out). The one strict check of our own run files:
    every reader of predictions lines and manifests calls it, whatever layer it sits in."""
    for key, adapter in _field_adapters(model).items():
        if key not in row:
            continue
        try:
            adapter.validate_python(row[key], strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in (key, *first["loc"]))
            raise DataError(path, number, where, f"{first['msg']}, got {row[key]!r}: not a {what}") from None


def check_prediction_line(path: Path, number: int, row: Mapping[str, Any], settings: frozenset[str] | None,
                          required: Sequence[str] = PREDICTION_KEYS) -> None:
    """One predictions.jsonl line checked strictly against `Prediction`, the one check of every reader of runs
    (reports, resume, agreement, exports): a line of the current run format (`format_version`) is validated whole
    (every field present, none other, each of its type, `runlog.read_run_file`); a format-1 line (no version:
    older runs and tools that write predictions) has the `required` keys (what its reader computes from) and each
    field it holds of its type. When `settings` is given (the known setting names, lower case, e.g.
    `registry.setting_names()`) its setting is one of them. A DataError naming file, line and field otherwise."""
    if "format_version" in row:
        read_run_file(Prediction, path, row, line=number, what="prediction line")
    else:
        for key in required:
            if key not in row:
                raise DataError(path, number, key, "missing: not a prediction line")
        check_fields(Prediction, path, number, row, "prediction line")
    setting = row.get("setting")
    if settings is not None and isinstance(setting, str) and setting.lower() not in settings:
        raise DataError(path, number, "setting", f"unknown setting {setting!r} (known: "
                        f"{', '.join(sorted(settings))}): not a prediction line")


@cache
def _field_adapters(model: type[BaseModel]) -> dict[str, TypeAdapter[Any]]:
    return {key: TypeAdapter(info.annotation) for key, info in model.model_fields.items()
            if info.annotation is not None}


def benchmark_names(stats: Mapping[str, Any]) -> dict[str, list[str]]:
    """The split and tier names a run's data declares (manifest `data_stats`), as results.json records them: an
    empty dict for PersonaFeedback's names (the default, so older results read the same)."""
    splits, tiers = list(stats.get("splits") or DEFAULT_SPLITS), list(stats.get("tiers") or DEFAULT_TIERS)
    if (tuple(splits), tuple(tiers)) == (DEFAULT_SPLITS, DEFAULT_TIERS):
        return {}
    return {"splits": splits, "tiers": tiers}
