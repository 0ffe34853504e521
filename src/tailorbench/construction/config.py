"""The build configuration (`tailor build run CONFIG.yaml`): a YAML file validated into `BuildConfig`.

Relative paths in the file are relative to the file itself, so an example directory can be copied anywhere.
Unknown keys are errors (a typo must not silently fall back to a default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tailorbench.datasets.layouts import RESERVED_NAMES
from tailorbench.errors import ConfigError

StructuredMode = Literal["json_schema", "llama_cpp", "json_object", "none"]
Variant = Literal["A1", "A2", "A3"]
RULES: dict[str, tuple[Variant, Variant]] = {"A1-A3": ("A1", "A3"), "A1-A2": ("A1", "A2"), "A2-A3": ("A2", "A3")}
#: candidate difficulty per rule: full vs no persona differ most (easy); full vs masked least (hard)
DEFAULT_DIFFICULTY: dict[str, str] = {"A1-A3": "easy", "A2-A3": "medium", "A1-A2": "hard"}
#: the rules from the easiest pair to tell apart to the hardest (the tiers' difficulty order)
RULES_BY_DIFFICULTY: tuple[str, ...] = ("A1-A3", "A2-A3", "A1-A2")
PROFILE_SECTIONS: tuple[str, ...] = ("Demographics", "Personality", "Preference", "Values_and_Interests")


class _Strict(BaseModel):
    #: unknown keys are errors, and so are NaN and infinities in number fields (ranges: each Field)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class GenerationConfig(_Strict):
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(1024, ge=1)
    seed: int | None = 0


class ProfileConfig(_Strict):
    max_memory_items: int = Field(40, ge=1)
    item_chars: int = Field(400, ge=20)
    max_attributes: int = Field(16, ge=1)
    key_chars: int = Field(40, ge=4)
    value_chars: int = Field(120, ge=4)
    max_evidence: int = Field(4, ge=1)
    max_tokens: int | None = Field(None, ge=1)


class QuestionsConfig(_Strict):
    scenes: list[str] = Field(default_factory=lambda: ["daily life", "work", "leisure"])
    per_user: int = Field(3, ge=1)
    question_chars: int = Field(200, ge=10)
    general_pool: list[str] = Field(default_factory=list)
    general_pool_file: Path | None = None
    general_per_user: int = Field(0, ge=0)
    max_tokens: int | None = Field(None, ge=1)

    @field_validator("scenes")
    @classmethod
    def _scenes(cls, value: list[str]) -> list[str]:
        if not value or any(not s.strip() for s in value):
            raise ValueError("give at least one non-empty scene")
        return value


class MaskConfig(_Strict):
    """A2's persona: hide these top-level sections, or (share) this fraction of the leaf facts, seeded per user."""

    sections: list[str] = Field(default_factory=list)
    share: float | None = Field(None, gt=0, lt=1)


class AnswersConfig(_Strict):
    answer_chars: int = Field(600, ge=10)
    mask: MaskConfig = Field(default_factory=lambda: MaskConfig(share=0.5))
    max_tokens: int | None = Field(None, ge=1)


def _name(value: str, what: str) -> str:
    if not value.strip() or value.strip().lower() in RESERVED_NAMES:
        raise ValueError(f"{what} {value!r} is not a usable name (empty, or reserved for the pooled cells)")
    return value


class PairsConfig(_Strict):
    rules: list[str] = Field(default_factory=lambda: ["A1-A3", "A1-A2", "A2-A3"])
    #: the tier each rule's pairs carry until people annotate them: PersonaFeedback's names by default, any
    #: layout's tier names otherwise (declared in the export's sidecar, easiest rule first)
    difficulty: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_DIFFICULTY))

    @field_validator("difficulty")
    @classmethod
    def _difficulty(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(set(value) - set(RULES))
        if bad:
            raise ValueError(f"unknown pair rule(s) {bad}; choose from {', '.join(RULES)}")
        return {rule: _name(name, "tier") for rule, name in value.items()}

    def tiers(self) -> tuple[str, ...]:
        """The tier names the pairs carry, easiest first (rules without an entry are 'medium')."""
        return tuple(dict.fromkeys(self.difficulty.get(rule, "medium") for rule in RULES_BY_DIFFICULTY
                                   if rule in self.rules))

    @field_validator("rules")
    @classmethod
    def _rules(cls, value: list[str]) -> list[str]:
        bad = [r for r in value if r not in RULES]
        if bad or not value:
            raise ValueError(f"unknown pair rule(s) {bad}; choose from {', '.join(RULES)}")
        return value


class SplitNames(_Strict):
    """The split names of the two kinds of question the pipeline writes: scene questions written for one person
    (`specific`) and questions from the shared pool (`general`); any layout's names, PersonaFeedback's by
    default."""

    specific: str = "specific"
    general: str = "general"

    @field_validator("specific", "general")
    @classmethod
    def _usable(cls, value: str) -> str:
        return _name(value, "split")

    @model_validator(mode="after")
    def _distinct(self) -> SplitNames:
        if self.specific == self.general:
            raise ValueError("specific and general need different split names")
        return self


class AnnotationConfig(_Strict):
    annotators_per_item: int = Field(3, ge=1)
    project: str | None = None


class BuildConfig(_Strict):
    name: str = "build"
    model: str
    model_options: dict[str, Any] = Field(default_factory=dict)
    #: where the model runs: `local` (this process) or `ray` (a vllm: model's engines as Ray Data LLM replicas
    #: on a cluster, docs/scale.md); not part of any stage's fingerprint: the records are the same
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    executor_options: dict[str, Any] = Field(default_factory=dict)
    #: how the JSON schema reaches the server: OpenAI/vLLM `json_schema`, llama-cpp-python's
    #: `json_object` + schema (`llama_cpp`), plain `json_object`, or `none` (prompt only)
    structured_output: StructuredMode = "json_schema"
    #: where the people come from: a memory JSONL (conversations; the profile stage infers personas) or
    #: `personas`, a benchmark any registered layout reads, whose users' personas are used as they are (any
    #: sections and field names; the profile stage then makes no model call); exactly one of the two
    memory: Path | None = None
    personas: str | None = None
    out: Path
    users: list[str] | None = None
    seed: int = 0
    #: attempts per item: 1 + retries, each retry shows the model its invalid output and the error
    retries: int = Field(2, ge=0, le=10)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
    questions: QuestionsConfig = Field(default_factory=QuestionsConfig)
    answers: AnswersConfig = Field(default_factory=AnswersConfig)
    pairs: PairsConfig = Field(default_factory=PairsConfig)
    splits: SplitNames = Field(default_factory=SplitNames)
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    #: stage name -> template file replacing the shipped one
    templates: dict[str, Path] = Field(default_factory=dict)

    @field_validator("templates")
    @classmethod
    def _template_names(cls, value: dict[str, Path]) -> dict[str, Path]:
        bad = sorted(set(value) - {"profile", "questions", "answer"})
        if bad:
            raise ValueError(f"unknown template name(s) {bad}; templates exist for profile, questions, answer")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> BuildConfig:
        if (self.memory is None) == (self.personas is None):
            raise ValueError("give exactly one of memory (a conversations JSONL) and personas (a benchmark)")
        return self

    def general_pool(self) -> list[str]:
        pool = list(self.questions.general_pool)
        if self.questions.general_pool_file is not None:
            path = self.questions.general_pool_file
            try:
                pool.extend(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
            except OSError as exc:
                raise ConfigError(f"cannot read general_pool_file {path}: {exc.strerror or exc}") from None
        return pool


def _resolve(base: Path, value: Any) -> Any:
    # only text is a path: anything else is left to the model's validation, which names the field
    return value if not isinstance(value, str) or Path(value).is_absolute() else str((base / value).resolve())


def load_build_config(path: str | Path, overrides: dict[str, Any] | None = None) -> BuildConfig:
    """Read and validate a YAML build config; relative paths resolve against the file's directory."""
    from tailorbench.files import load_yaml

    path = Path(path)
    data = load_yaml(path, dict, "a build config (a mapping of settings at the top level)")
    data.update(overrides or {})
    base = path.resolve().parent
    for key in ("memory", "out"):
        if key in data:
            data[key] = _resolve(base, data[key])
    personas = data.get("personas")
    if isinstance(personas, str) and (base / personas).exists():  # a path next to the file, else a data spec
        data["personas"] = _resolve(base, personas)
    if isinstance(data.get("templates"), dict):
        data["templates"] = {k: _resolve(base, v) for k, v in data["templates"].items()}
    questions = data.get("questions")
    if isinstance(questions, dict) and questions.get("general_pool_file"):
        questions["general_pool_file"] = _resolve(base, questions["general_pool_file"])
    try:
        return BuildConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        # a key as typed, escaped (a key holding a newline or an escape stays on the message's one line)
        where = ".".join(str(p) if str(p).isprintable() else repr(str(p)) for p in first["loc"]) or "top level"
        raise ConfigError(f"{path}: {where}: {first['msg']} ({len(exc.errors())} error(s) in all)") from None
