"""What every stage of `tailor build` shares (`construction/pipeline.py` runs them): the run's context (config,
models, templates, output folder), a stage's report, the model options, the fingerprint hash and the reader of a
stage's records."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.construction.config import BuildConfig
from tailorbench.construction.structured import load_template
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import ConfigError
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import ChatModel, GenParams

VARIANTS = {"A1": "full persona", "A2": "masked persona", "A3": "no persona"}


#: stages whose items are model calls; the others count outcomes (identical answers ...), not failed calls
CALL_STAGES = ("profile", "questions", "answers")


def fingerprint_of(*parts: Any) -> str:
    payload = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def read_records(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in read_jsonl(path, InvalidRows())]


@dataclass
class StageReport:
    name: str
    status: str  # ran | reused
    fingerprint: str
    records: int
    stats: dict[str, Any]
    failures: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BuildContext:
    config: BuildConfig
    model: ChatModel | None = None
    templates: dict[str, tuple[Any, str]] = field(default_factory=dict)

    def template(self, name: str) -> tuple[Any, str]:
        if name not in self.templates:
            self.templates[name] = load_template(name, self.config.templates.get(name))
        return self.templates[name]

    def chat_model(self) -> ChatModel:
        if self.model is None:
            self.model = make_chat_model(self.config.model, model_options(self.config))
        return self.model

    def params(self, max_tokens: int | None) -> GenParams:
        gen = self.config.generation
        return GenParams(temperature=gen.temperature, max_tokens=max_tokens or gen.max_tokens, seed=gen.seed)

    @property
    def attempts(self) -> int:
        return 1 + self.config.retries


def model_options(config: BuildConfig) -> dict[str, Any]:
    """The model's backend options on the build's executor. Under `--executor ray` a vllm: model's engines are
    Ray Data LLM replicas on the cluster; a build has nothing else to spread, so any other model is refused (it
    would run in this process all the same)."""
    from tailorbench.evaluate.executors import generator_options

    options = generator_options(config.model, config.model_options, config.executor, config.ray_address,
                                config.executor_options)
    if config.executor == "ray" and "ray_data" not in options:
        raise ConfigError(f"--executor ray spreads a build's generation for a vllm: model (its engines as Ray Data "
                          f"LLM replicas, docs/scale.md); {config.model} would run in this process: leave "
                          "--executor out, or build with a vllm: model")
    return options
