"""`tailor train-rm`: Bradley-Terry reward models on personalized preference pairs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailorbench.train.config import RMTrainConfig

if TYPE_CHECKING:  # pydantic stays out of `tailor --help`, which reads RMTrainConfig's fields for the flags
    from tailorbench.api.results import TrainResult

__all__ = ["RMTrainConfig", "train_rm"]


def train_rm(config: RMTrainConfig | str | Path | None = None, progress: bool = False,
             **overrides: Any) -> TrainResult:
    """`tailor train-rm`: train a Bradley-Terry reward model (`config` is an RMTrainConfig or a YAML path,
    `overrides` its fields); returns OUT/summary.json. The checkpoint is the judge `rm:OUT` (`.judge`)."""
    from tailorbench.api.results import TrainResult
    from tailorbench.files import claim_output
    from tailorbench.train.config import load_config
    from tailorbench.train.trainer import train_reward_model

    if isinstance(config, RMTrainConfig):
        cfg = RMTrainConfig(**{**config.to_dict(), **{k: v for k, v in overrides.items() if v is not None}})
    else:
        cfg = load_config(config, overrides)
    cfg = cfg.validate()
    assert cfg.out is not None  # validate() requires it
    # the output rule before any data is read or a model loaded: never the data, the base model or the config
    dest = claim_output("out", cfg.out, inputs=[cfg.data, cfg.eval_data, cfg.model,
                                                None if isinstance(config, RMTrainConfig) else config],
                        directory=True, made_by="tailor train-rm")
    return TrainResult.model_validate(train_reward_model(cfg, dest, progress=progress))
