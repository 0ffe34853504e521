"""`tailor train-rm`: Bradley-Terry reward models on personalized preference pairs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tailorbench.aio import async_twin
from tailorbench.train.config import RMTrainConfig

if TYPE_CHECKING:  # pydantic stays out of `tailor --help`, which reads RMTrainConfig's fields for the flags
    from tailorbench.api.results import TrainResult

__all__ = ["RMTrainConfig", "train_rm", "train_rm_async"]


def train_rm(config: Any = None, progress: bool = False, **overrides: Any) -> TrainResult:
    """`tailor train-rm`: train a Bradley-Terry reward model (`config` is an RMTrainConfig or a YAML path,
    `overrides` its fields); returns OUT/summary.json. The checkpoint is the judge `rm:OUT` (`.judge`)."""
    from tailorbench.api.results import TrainResult
    from tailorbench.train.api import train_rm as run

    return TrainResult.model_validate(run(config, progress=progress, **overrides))


train_rm_async = async_twin(train_rm)
