"""The configuration of a gen-eval run: stored in manifest.json, so `--resume` continues the same run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: the reference is the benchmark's human-preferred answer unless a model spec is given
CHOSEN = "chosen"


@dataclass
class GenEvalConfig:
    """Everything that decides a gen-eval run's generations and verdicts."""

    data: str = "demo"
    #: the model under test (a `models/` spec: openai:MODEL[@URL] or hf:PATH)
    model: str = ""
    #: `chosen`, or a model spec whose answers are generated the same way
    reference: str = CHOSEN
    #: any judge spec (llm:..., rm:..., longer, ...)
    judge: str = "longer"
    #: the context the generating models see (persona | none | rag)
    setting: str = "persona"
    #: the context the judge sees (persona by default, whatever the generation setting)
    judge_setting: str = "persona"
    seed: int = 0
    #: cases sampled per split x tier (seeded); None = every case
    per_tier: int | None = 50
    splits: list[str] | None = None
    tiers: list[str] | None = None
    persona_sections: list[str] | None = None
    skip_invalid: bool = False
    n_boot: int = 1000
    temperature: float = 0.0
    max_tokens: int = 512
    #: backend options of the generating models (concurrency, timeout, ...)
    model_options: dict[str, Any] = field(default_factory=dict)
    judge_options: dict[str, Any] = field(default_factory=dict)
    setting_options: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None
    #: a `tailor eval` run directory of the same judge; None = validate on the spot
    judge_run: str | None = None
    #: cases of the on-the-spot validation (seeded sample of the benchmark); 0 = no validation
    validate_cases: int = 50
    #: the run fails (exit code 3) when more than this share of its calls (generations and verdicts) failed
    max_failed: float = 0.0
    #: where the judge's batches run (verdicts and the validation run; generation stays in this process):
    #: `local` or `ray` (evaluate/executors.py, docs/scale.md), with the cluster's address and the options
    executor: str = "local"
    ray_address: str | None = None
    executor_options: dict[str, Any] = field(default_factory=dict)
    #: provider batch APIs (`--batch`, docs/models.md "Batch mode") for the judge and the generating models whose
    #: backend has one (`batch_targets`); their batch state lives in the run directory, so `--resume` re-attaches
    batch: bool = False

    def judge_extra(self) -> dict[str, Any]:
        """The judge's options, with `batch=true` under `--batch` when the judge's model can batch."""
        return {**self.judge_options, **({"batch": "true"} if self.batch and "judge" in batch_targets(self) else {})}

    def model_extra(self, spec: str) -> dict[str, Any]:
        """The backend options of the generating model `spec`, with `batch=true` under `--batch` when it can."""
        from tailorbench.models.batch import supports_batches

        return {"seed": self.seed, **self.model_options,
                **({"batch": "true"} if self.batch and supports_batches(spec) else {})}


def batch_targets(config: GenEvalConfig) -> dict[str, str]:
    """role (`model`, `reference`, `judge`) -> model spec, for the models of a run whose backend has a batch API."""
    from tailorbench.judges.base import parse_spec, split_spec_options
    from tailorbench.models.batch import supports_batches

    name, arg = parse_spec(split_spec_options(config.judge)[0])
    specs = {"model": config.model, "reference": "" if config.reference == CHOSEN else config.reference,
             "judge": str(arg or "") if name == "llm" else ""}
    return {role: spec for role, spec in specs.items() if spec and supports_batches(spec)}
