"""The arena configuration (`ARENA_DIR/arena.yaml`): one YAML file validated into `ArenaConfig` before any work.

The conventions of `tailor study`'s study.yaml (humanstudy/config.py): unknown keys are errors, values are read
strictly (`places: true` is not 1), and every error names the file and the key's path
(`arena.yaml: contestants[1].model: ...`, exit 2), so a typo never falls back to a default. Model specs are built
(building opens nothing) at load time. The same model with and without the participant's profile is two
contestants; `pairs_personalized_generic` pairs them by model spec, so "personalized vs generic" is a pairing
like any other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tailorbench.arena import CONFIG_FILE
from tailorbench.errors import ConfigError

#: what a contestant's or a profile field's name may be (it names leaderboard rows and segment tables)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: the illustrative model of the demo (arena/demo_model.py): only in an arena labelled illustrative
ILLUSTRATIVE = "illustrative-arena"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _name(value: str) -> str:
    if not NAME.fullmatch(value):
        raise ValueError(f"{value!r}: letters, digits and _.- only, starting with a letter or digit, at most 64")
    return value


class Contestant(_Strict):
    """One contestant: a model spec, with or without the participant's profile in its system prompt."""

    name: str
    model: str = Field(min_length=1)
    #: true: the participant's profile answers go into the system prompt (the personalized contestant)
    profile: bool = False
    #: model options (cache, concurrency, prices ...), over `models.options`
    options: dict[str, Any] = Field(default_factory=dict)

    _name = field_validator("name")(_name)


class ProfileField(_Strict):
    """One question of the profile questionnaire: a choice (`choices`) or free text (no `choices`)."""

    key: str
    label: str = Field(min_length=1)
    #: the section the answer goes under in the profile (PersonaFeedback's: Demographics, Personality, Preference)
    section: Literal["Demographics", "Personality", "Preference"] = "Demographics"
    choices: list[str] | None = None
    required: bool = False
    max_chars: int = Field(200, ge=1, le=2000)
    #: a per-segment leaderboard is made for this field (choice fields only)
    segment: bool = False

    _key = field_validator("key")(_name)

    @model_validator(mode="after")
    def _choices(self) -> ProfileField:
        if self.choices is not None and (not self.choices or len(set(self.choices)) != len(self.choices)):
            raise ValueError("choices: a non-empty list of distinct answers")
        if self.segment and self.choices is None:
            raise ValueError("segment: only a field with choices makes segments (free text has no groups)")
        return self


def _default_fields() -> list[ProfileField]:
    """PersonaFeedback's persona sections (demographics, personality, preferences) and PRISM's survey (age,
    gender, location, how an answer should be): the questionnaire an arena gets when it names none."""
    return [
        ProfileField(key="age", label="Your age", choices=["18-24", "25-34", "35-44", "45-54", "55-64", "65+"],
                     segment=True),
        ProfileField(key="gender", label="Your gender", choices=["Woman", "Man", "Non-binary", "Prefer not to say"],
                     segment=True),
        ProfileField(key="location", label="Where you live (country or region)", max_chars=80),
        ProfileField(key="occupation", label="Your work or studies", max_chars=120),
        ProfileField(key="social", label="You recharge ...", section="Personality",
                     choices=["alone or with one or two people", "in company"], segment=True),
        ProfileField(key="planning", label="You prefer to ...", section="Personality",
                     choices=["plan ahead", "keep options open"]),
        ProfileField(key="interests", label="Your interests and hobbies", section="Preference", max_chars=300),
        ProfileField(key="answer_style", label="Answers should be ...", section="Preference",
                     choices=["short and direct", "detailed", "step by step"], segment=True),
        ProfileField(key="other", label="Anything else an assistant should know about you", section="Preference",
                     max_chars=500),
    ]


class ProfileConfig(_Strict):
    fields: list[ProfileField] = Field(default_factory=_default_fields)

    @field_validator("fields")
    @classmethod
    def _distinct(cls, value: list[ProfileField]) -> list[ProfileField]:
        if not value:
            raise ValueError("name at least one field")
        keys = [f.key for f in value]
        if len(set(keys)) != len(keys):
            raise ValueError(f"field keys are distinct ({sorted(k for k in keys if keys.count(k) > 1)[0]!r} twice)")
        return value


class QuestionsConfig(_Strict):
    """Where questions come from: the participant's own (`own`), a prompt pool (`pool`: inline, or
    `pool_file`, one question per line), or both."""

    own: bool = True
    pool: list[str] = Field(default_factory=list)
    pool_file: Path | None = None
    max_chars: int = Field(2000, ge=10, le=20000)


class BattlesConfig(_Strict):
    """Single-turn battles: a contestant pair drawn uniformly over all pairs, the left/right order drawn too
    (both recorded per battle), from `seed` and the participant."""

    per_participant: int = Field(10, ge=1, le=1000)
    pairing: Literal["uniform"] = "uniform"
    seed: int = Field(0, ge=0)
    #: a battle a killed server left mid-answer: generated again (`regenerate`) or dropped (`drop`), counted
    on_restart: Literal["regenerate", "drop"] = "regenerate"
    #: the share of battles (from the third on) that show one of the participant's earlier voted battles again,
    #: its sides drawn anew: the repeat consistency of voter quality
    repeat_rate: float = Field(0.0, ge=0, le=0.5)


class VoteConfig(_Strict):
    """A / B / tie / both bad, with a confidence 1-3; an optional free-text reason."""

    reason: bool = True
    reason_max_chars: int = Field(500, ge=1, le=5000)


class GoldBattle(_Strict):
    question: str = Field(min_length=1)
    better: str = Field(min_length=1)
    worse: str = Field(min_length=1)


class GoldConfig(_Strict):
    """Battles with a known better answer, shown in place of a new question at `rate` (seeded per participant),
    for voter quality."""

    rate: float = Field(0.0, ge=0, le=0.5)
    battles: list[GoldBattle] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some(self) -> GoldConfig:
        if self.rate > 0 and not self.battles:
            raise ValueError("rate: gold battles are shown only when `battles` names some")
        return self


class SpendConfig(_Strict):
    """Caps on model spend, in USD (the currency of models/pricing.py); reaching one stops new battles."""

    per_participant: float | None = Field(None, gt=0)
    per_arena: float | None = Field(None, gt=0)
    currency: Literal["USD"] = "USD"


class CrowdConfig(_Strict):
    """As in crowd studies (annotation/studies.py): `open` (anyone with the link) or `prolific` (a place per
    participant id the platform sends, a completion code, a time limit)."""

    kind: Literal["open", "prolific"] = "open"
    places: int | None = Field(None, ge=1)
    completion_code: str | None = Field(None, min_length=1, max_length=64)
    completion_url: str | None = None
    time_limit_min: int = Field(60, ge=1)
    #: said on the consent page before the list of what is stored
    consent: str = ("This is a study of how well AI assistants answer people like you. You will answer a few "
                    "questions about yourself, ask questions and compare two answers to each.")

    @field_validator("completion_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        from tailorbench.options import as_url

        if value is None:
            return None
        try:
            return as_url("url", value)
        except ConfigError as exc:
            raise ValueError(str(exc).removeprefix("option url must be ")) from None

    @model_validator(mode="after")
    def _prolific(self) -> CrowdConfig:
        if self.kind == "prolific" and (self.places is None or self.completion_code is None):
            raise ValueError("kind prolific needs places and completion_code")
        return self


class ModelsConfig(_Strict):
    #: options every contestant's model gets (a contestant's own `options` win)
    options: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int = Field(512, ge=1, le=32768)
    temperature: float = Field(0.7, ge=0, le=2)


class LeaderboardConfig(_Strict):
    min_battles: int = Field(20, ge=1)
    ci: float = Field(0.95, gt=0, lt=1)
    bootstrap: int = Field(200, ge=10)
    seed: int = Field(0, ge=0)
    #: LMArena's style control: the answers' length difference as a covariate
    style_control: bool = True


class ArenaConfig(_Strict):
    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    contestants: list[Contestant] = Field(min_length=2)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
    questions: QuestionsConfig = Field(default_factory=QuestionsConfig)
    battles: BattlesConfig = Field(default_factory=BattlesConfig)
    vote: VoteConfig = Field(default_factory=VoteConfig)
    gold: GoldConfig = Field(default_factory=GoldConfig)
    spend: SpendConfig = Field(default_factory=SpendConfig)
    crowd: CrowdConfig = Field(default_factory=CrowdConfig)
    #: the database URL (sqlite:///... or postgresql+psycopg://...); default SQLite ARENA_DIR/arena.sqlite
    database: str | None = None
    leaderboard: LeaderboardConfig = Field(default_factory=LeaderboardConfig)
    #: every page and output says its figures are illustrative (the demo: an illustrative model, simulated people)
    illustrative: bool = False

    @field_validator("contestants")
    @classmethod
    def _distinct(cls, value: list[Contestant]) -> list[Contestant]:
        names = [c.name for c in value]
        if len(set(names)) != len(names):
            raise ValueError(f"contestant names are distinct ({sorted(n for n in names if names.count(n) > 1)[0]!r} "
                             "twice)")
        seen = [(c.model, c.profile) for c in value]
        if len(set(seen)) != len(seen):
            raise ValueError("each (model, profile) appears once: the same model twice with the same profile "
                             "setting is one contestant")
        return value

    def contestant(self, name: str) -> Contestant:
        return next(c for c in self.contestants if c.name == name)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Every unordered contestant pair, in config order (uniform pairing draws among these)."""
        names = [c.name for c in self.contestants]
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]

    @property
    def pairs_personalized_generic(self) -> list[tuple[str, str]]:
        """(personalized, generic) contestant names of each model spec that appears both with and without the
        profile."""
        generic = {c.model: c.name for c in self.contestants if not c.profile}
        return [(c.name, generic[c.model]) for c in self.contestants if c.profile and c.model in generic]

    def pool_questions(self) -> list[str]:
        """The prompt pool: inline questions, then the pool file's non-empty lines."""
        out = list(self.questions.pool)
        if self.questions.pool_file is not None:
            from tailorbench.files import load_bytes

            text = load_bytes(self.questions.pool_file, "a question pool").decode("utf-8", errors="replace")
            out += [line.strip() for line in text.splitlines() if line.strip()]
        return out

    def segment_fields(self) -> list[str]:
        return [f.key for f in self.profile.fields if f.segment]


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out or "top level"


def _check(config: ArenaConfig, path: Path) -> None:
    """What pydantic cannot see: the question sources, the pool file, the model specs."""
    def fail(where: str, message: str) -> None:
        raise ConfigError(f"{path}: {where}: {message}")

    q = config.questions
    if q.pool_file is not None and not q.pool_file.is_file():
        fail("questions.pool_file", f"no such file {q.pool_file}")
    if not q.own and not config.pool_questions():
        fail("questions", "name a source: own: true (participants ask their own) or a pool (pool / pool_file)")
    from tailorbench.arena.demo_model import register as register_illustrative
    from tailorbench.models.backends import make_chat_model

    for i, c in enumerate(config.contestants):
        if c.model.strip().lower().startswith(ILLUSTRATIVE + ":"):
            if not config.illustrative:
                fail(f"contestants[{i}].model", f"the {ILLUSTRATIVE} model is the demo's: set illustrative: true, "
                                                "so every output says its figures are illustrative")
            register_illustrative()
        try:
            make_chat_model(c.model, {**config.models.options, **c.options})
        except ConfigError as exc:
            fail(f"contestants[{i}].model", f"model spec {c.model!r} does not build: {exc}")


def parse_config(data: Any, path: str | Path, base: Path | None = None) -> ArenaConfig:
    """An arena config from its parsed YAML (`path` names it in errors; relative paths against `base`)."""
    path = Path(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level: an arena config is a mapping of settings")
    base = base or path.resolve().parent
    data = json.loads(json.dumps(data, default=str))
    questions = data.get("questions")
    if isinstance(questions, dict) and isinstance(questions.get("pool_file"), str):
        file = questions["pool_file"]
        questions["pool_file"] = file if Path(file).is_absolute() else str((base / file).resolve())
    try:
        config = ArenaConfig.model_validate_json(json.dumps(data), strict=True)
    except ValidationError as exc:
        from tailorbench.files import validation_message

        raise ConfigError(f"{path}: {validation_message(exc.errors(), _where)}") from None
    _check(config, path)
    return config


def load_config(arena_dir: str | Path) -> ArenaConfig:
    """ARENA_DIR/arena.yaml read (bounded) and validated; a ConfigError naming the key path otherwise."""
    from tailorbench.files import load_yaml

    path = Path(arena_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: no arena config here (tailor arena init {arena_dir} writes one)")
    return parse_config(load_yaml(path, None, "an arena config"), path)


def json_schema() -> dict[str, Any]:
    """The JSON schema of arena.yaml (docs/arena.md describes it)."""
    return ArenaConfig.model_json_schema()
