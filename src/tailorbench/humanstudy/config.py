"""The study configuration (`STUDY_DIR/study.yaml`): one YAML file validated into `StudyConfig` before any work.

Unknown keys are errors and every error names the key's path (`stages.relevance.crowd.places: ...`), so a typo
never falls back to a default. Relative paths resolve against the file's directory, so a study directory can be
moved. Model specs are built (building opens nothing) and stage dependencies checked at load time: a stage that
needs one the config does not run is an error, as is a model step whose model is not named.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tailorbench.errors import ConfigError, shown

#: the stages in the order the study runs them (the paper's three)
STAGES: tuple[str, ...] = ("extraction", "relevance", "incorporation")
#: the annotation service's task type of each stage
TASK_TYPE = {"extraction": "attributes", "relevance": "relevance", "incorporation": "ab_rating"}
#: what each stage needs run before it (its items come from that stage's human majority)
NEEDS = {"extraction": None, "relevance": "extraction", "incorporation": "relevance"}
CONFIG_FILE = "study.yaml"
#: what a judge's name may be (it names the judge's step folders)
JUDGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")


class _Strict(BaseModel):
    #: unknown keys are errors, and so are NaN and infinities; `parse_config` validates in strict mode, so a
    #: value of the wrong type is an error too (`places: true` is not 1, `quota: "3"` is not 3)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _http_url(value: str | None) -> str | None:
    """A link or redirect target: http(s) only (a `javascript:` URL would be handed to every participant)."""
    from tailorbench.options import as_url

    if value is None:
        return None
    try:
        return as_url("url", value)
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("option url must be ")) from None


class ProlificCrowd(_Strict):
    """A crowd study on a redirect-based platform (Prolific by default): one study link per stage."""

    kind: Literal["prolific"]
    #: participants (places) the platform may send
    places: int = Field(ge=1)
    #: items per participant (gold included)
    quota: int = Field(ge=1)
    #: paid per place, in `currency` (for the plan's crowd cost: places x reward)
    reward: float = Field(ge=0)
    currency: str = "GBP"
    time_limit_min: int = Field(60, ge=1)
    completion_code: str
    screenout_code: str | None = None
    screenout_gold_below: float | None = Field(None, gt=0, le=1)
    completion_url: str | None = None
    consent: str = ""

    _completion_url = field_validator("completion_url")(_http_url)


class OwnAnnotators(_Strict):
    """The researcher's own annotators, each with a personal login link."""

    kind: Literal["own"]
    annotators: list[str] = Field(min_length=1)
    link_days: float = Field(7.0, gt=0, le=365)

    @field_validator("annotators")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        if any(not n.strip() for n in value) or len(set(value)) != len(value):
            raise ValueError("annotator names are non-empty and distinct")
        return value


Crowd = Annotated[ProlificCrowd | OwnAnnotators, Field(discriminator="kind")]


class HumansConfig(_Strict):
    """Stage 3 only: people rate a sample of the A/B tasks (`share` of them, drawn by `sampling`, seeded), the
    judges rate every task, and the report gives the human-anchored estimate (prediction-powered inference, the
    judges' ratings as the proxy) beside the judge-only figure (docs/study.md, "People on a sample")."""

    #: the share of the stage's tasks people rate (at least 2 tasks; 1: every task)
    share: float = Field(gt=0, le=1)
    #: uniform: a simple random sample of tasks; stratified: one per condition (gold, none); active: more
    #: tasks where the judges' ratings are near "no better" (the judges rate before people)
    sampling: Literal["uniform", "stratified", "active"] = "uniform"
    #: what the report gives: the human-anchored estimate (the judges' ratings corrected by people's)
    estimate: Literal["anchored"] = "anchored"
    #: the sample's seed (a whole number of 0 or more)
    seed: int = Field(0, ge=0)


class StageConfig(_Strict):
    """One stage's annotation: N annotators per item, gold items, who annotates, and whether judges vote."""

    n: int = Field(3, ge=1)
    #: gold items in the annotation service's items format of the stage's task type (with `gold`)
    gold: Path | None = None
    gold_every: int = Field(5, ge=1)
    instructions: str = ""
    crowd: Crowd
    #: run the study's judges on this stage's items (relevance: yes/no votes; incorporation: A/B ratings)
    judges: bool = True
    #: stage 3: people rate a sample of the tasks; the report anchors the judges' ratings on theirs
    humans: HumansConfig | None = None


class StagesConfig(_Strict):
    extraction: StageConfig | None = None
    relevance: StageConfig | None = None
    incorporation: StageConfig | None = None


class InputsConfig(_Strict):
    #: stage 1: `{"user_id", "conversations", "source"?}` per line (what `tailor stages extract` reads)
    conversations: Path | None = None
    #: stage 2: the users' new prompts, `{"user_id", "prompt", "prompt_index"?}` per line (other keys ignored)
    prompts: Path | None = None


class ModelsConfig(_Strict):
    extractor: str | None = None
    generator: str | None = None
    #: judge name -> model spec
    judges: dict[str, str] = Field(default_factory=dict)
    #: model options every model gets (cache, concurrency, prices ...)
    options: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int = Field(256, ge=1)
    #: the share of a model step's calls that may fail (default 0: none); more stops the run with exit 3 and
    #: the step is not recorded, so the next run asks the failed calls again (the others come from the cache)
    max_failed: float = Field(0.0, ge=0, le=1)

    @field_validator("judges")
    @classmethod
    def _judge_names(cls, value: dict[str, str]) -> dict[str, str]:
        """A judge's name names its steps and their folders (steps/relevance.judge.NAME): letters, digits and
        `_.-` only, so a name can never lead outside the study folder."""
        for name in value:
            if not JUDGE_NAME.fullmatch(name):
                raise ValueError(f"judge name {shown(name)}: letters, digits and _.- only (it names the judge's "
                                 "step folders), starting with a letter or digit")
        return value


class AnnotationConfig(_Strict):
    #: the service's database URL; default SQLite under STUDY_DIR/annotation
    db: str | None = None
    #: where the service is served (the links printed are under it)
    base_url: str = "http://127.0.0.1:8000"

    _base_url = field_validator("base_url")(_http_url)


class StatisticsConfig(_Strict):
    n_boot: int = Field(1000, ge=1)
    seed: int = 0
    min_shared: int = Field(20, ge=1)
    epsilon: float = Field(0.2, gt=0, lt=1)
    min_items: int = Field(30, ge=1)


#: names in a study folder that are the study's own state: a report placed there would replace them
STUDY_OWN = ("study.yaml", "state.json", "run.lock", "steps", "annotation")


class ReportConfig(_Strict):
    #: where the report goes: a folder inside the study folder (relative), replaced as a whole by each report
    dir: Path = Path("report")
    #: the report says its figures are illustrative (the demo: an illustrative model and simulated people)
    illustrative: bool = False
    #: also train and judge the paper's interventions on the study's labels (held-out users): the stage-1
    #: verifier and the stage-2 relevance classifier (the MiniLM encoder; the `local` extra)
    interventions: bool = False

    @field_validator("dir")
    @classmethod
    def _inside_the_study(cls, value: Path) -> Path:
        """The report replaces its folder as a whole: only a folder inside the study folder, which is none of
        the study's own state, may be named (`.`, `..` or an absolute path would replace the study, the folder
        above it or a stranger's folder)."""
        if value.is_absolute() or ".." in value.parts or not value.parts:
            raise ValueError(f"{str(value)!r}: name a folder inside the study folder as a relative path without "
                             "'..' (e.g. report): the report replaces that folder as a whole")
        if value.parts[0] in STUDY_OWN or value.parts[0].startswith("."):
            raise ValueError(f"{str(value)!r}: {value.parts[0]} is the study's own state; name another folder "
                             "(e.g. report)")
        return value


class StudyConfig(_Strict):
    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    inputs: InputsConfig = Field(default_factory=InputsConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    stages: StagesConfig
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    statistics: StatisticsConfig = Field(default_factory=StatisticsConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)

    def stage(self, name: str) -> StageConfig | None:
        value: StageConfig | None = getattr(self.stages, name)
        return value

    def run_stages(self) -> list[str]:
        return [s for s in STAGES if self.stage(s) is not None]


def json_schema() -> dict[str, Any]:
    """The published JSON schema of study.yaml (docs/study.md is generated from it)."""
    return StudyConfig.model_json_schema()


def _where(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a key path (`stages.relevance.crowd.places`; list entries `[i]`), without
    the discriminated union's tag."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("prolific", "own") and out.endswith("crowd"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "top level"


def _resolve(base: Path, value: Any) -> Any:
    if not isinstance(value, str) or not value:
        return value
    return value if Path(value).is_absolute() else str((base / value).resolve())


def _check(config: StudyConfig, path: Path) -> None:
    """What pydantic cannot see: stage dependencies, the models each step needs, model specs, input files."""
    def fail(where: str, message: str) -> None:
        raise ConfigError(f"{path}: {where}: {message}")

    if not config.run_stages():
        fail("stages", "name at least one stage (extraction, relevance, incorporation)")
    for stage in config.run_stages():
        need = NEEDS[stage]
        if need is not None and config.stage(need) is None:
            fail(f"stages.{stage}", f"needs stage {need!r}, which this study does not run (its items come from "
                                    f"the {need} stage's human majority)")
        cfg = config.stage(stage)
        assert cfg is not None
        if cfg.humans is not None:
            if stage != "incorporation":
                fail(f"stages.{stage}.humans", "only stage incorporation rates a sample of its items (the "
                                               "earlier stages' human majority builds the next stage's items)")
            if not cfg.judges or not config.models.judges:
                fail(f"stages.{stage}.humans", "the anchored estimate takes the judges' ratings as the proxy: "
                                               "name a judge in models.judges and leave stages.incorporation."
                                               "judges true")
        if cfg.gold is not None and not cfg.gold.is_file():
            fail(f"stages.{stage}.gold", f"no such file {cfg.gold}")
    if config.stage("extraction") is not None:
        if config.models.extractor is None:
            fail("models.extractor", "stage extraction needs an extractor model")
        if config.inputs.conversations is None:
            fail("inputs.conversations", "stage extraction needs the users' conversations")
    if config.stage("relevance") is not None and config.inputs.prompts is None:
        fail("inputs.prompts", "stage relevance needs the users' new prompts")
    if config.stage("incorporation") is not None and config.models.generator is None:
        fail("models.generator", "stage incorporation needs a generator model")
    for key in ("conversations", "prompts"):
        file = getattr(config.inputs, key)
        if file is not None and not file.is_file():
            fail(f"inputs.{key}", f"no such file {file}")
    from tailorbench.humanstudy.demo_model import BACKEND
    from tailorbench.humanstudy.demo_model import register as register_illustrative
    from tailorbench.models.backends import make_chat_model

    for where, spec in model_specs(config):
        if spec.strip().lower().startswith(BACKEND + ":"):  # the demo's model: only in a study labelled so
            if not config.report.illustrative:
                fail(where, f"the {BACKEND} model answers by a hash of the prompt, for demos: set "
                            "report.illustrative: true, so the report says its figures are illustrative")
            register_illustrative()
        try:
            make_chat_model(spec, dict(config.models.options))
        except ConfigError as exc:
            fail(where, f"model spec {spec!r} does not build: {exc}")
    _check_report_place(config, path.parent, fail)


def model_specs(config: StudyConfig) -> list[tuple[str, str]]:
    """(study.yaml key, model spec) of every model the study names: `models.extractor`, `models.generator`,
    `models.judges.NAME`."""
    specs = [("models.extractor", config.models.extractor), ("models.generator", config.models.generator)]
    specs += [(f"models.judges.{name}", spec) for name, spec in config.models.judges.items()]
    return [(where, spec) for where, spec in specs if spec is not None]


def missing_key(config: StudyConfig, where: str, spec: str, study_file: Path | str = "study.yaml") -> str | None:
    """What to say when the model at study.yaml key `where` needs an API key that is not set: the key, its spec,
    the variable, and the study.yaml keys that change it; None when nothing is missing."""
    from tailorbench.models.backends import make_chat_model
    from tailorbench.models.keyed import missing_key as missing

    variable = missing(make_chat_model(spec, dict(config.models.options)))
    if variable is None:
        return None
    return (f"{study_file}: {where} ({spec}) needs ${variable}, which is not set: export it, or point "
            f"{where} at a server of your own (openai:MODEL@http://HOST:PORT/v1), or name another variable "
            f"in models.options.api_key_env")


def database_place(config: StudyConfig, study_dir: Path) -> Path | None:
    """The study's annotation database as a path, when it is a file or folder (SQLite); None for a server."""
    import os

    db = config.annotation.db or os.environ.get("TAILOR_ANNOTATE_DB")
    if not db:
        return study_dir / "annotation"
    if "://" not in db:
        return Path(db)
    if db.startswith("sqlite:///"):
        return Path(db[len("sqlite:///"):].split("?", 1)[0])
    return None


def _check_report_place(config: StudyConfig, study_dir: Path, fail: Any) -> None:
    """The report folder holds none of the study's inputs nor its annotation database (it is replaced as a
    whole); by the paths alone, so a read-only study can still be planned. `run` claims the folder through the
    files module's door before any work (humanstudy.report.report_output)."""
    place = (study_dir / config.report.dir).resolve()
    named: list[tuple[str, Path | None]] = [("annotation.db", database_place(config, study_dir)),
                                            ("inputs.conversations", config.inputs.conversations),
                                            ("inputs.prompts", config.inputs.prompts)]
    named += [(f"stages.{s}.gold", cfg.gold) for s in config.run_stages() if (cfg := config.stage(s)) is not None]
    for key, where in named:
        if where is not None and (place == where.resolve() or place in where.resolve().parents):
            fail("report.dir", f"{config.report.dir} holds {key} ({where}): the report replaces its folder as a "
                               "whole; name another folder")


def parse_config(data: Any, path: str | Path, base: Path | None = None) -> StudyConfig:
    """A study config from its parsed YAML (`path` names it in errors; relative paths against `base`)."""
    path = Path(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level: a study config is a mapping of settings")
    base = base or path.resolve().parent
    data = json.loads(json.dumps(data, default=str))  # a copy: the paths below are resolved in it
    inputs = data.get("inputs")
    if isinstance(inputs, dict):
        for key in ("conversations", "prompts"):
            inputs[key] = _resolve(base, inputs.get(key)) if key in inputs else None
            if inputs[key] is None:
                del inputs[key]
    stages = data.get("stages")
    if isinstance(stages, dict):
        for cfg in stages.values():
            if isinstance(cfg, dict) and isinstance(cfg.get("gold"), str):
                cfg["gold"] = _resolve(base, cfg["gold"])
    try:
        config = StudyConfig.model_validate_json(json.dumps(data), strict=True)  # JSON mode: paths from text
    except ValidationError as exc:
        from tailorbench.files import validation_message

        raise ConfigError(f"{path}: {validation_message(exc.errors(), _where)}") from None
    _check(config, path)
    return config


def load_config(study_dir: str | Path) -> StudyConfig:
    """STUDY_DIR/study.yaml read (bounded) and validated; a ConfigError naming the key path otherwise."""
    from tailorbench.files import load_yaml

    path = Path(study_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: no study config here (tailor study init {study_dir} writes one)")
    return parse_config(load_yaml(path, None, "a study config"), path)
