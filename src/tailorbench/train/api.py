"""Python twin of `tailor train-rm`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.train.config import RMTrainConfig, load_config


def train_rm(config: RMTrainConfig | str | Path | None = None, progress: bool = False,
             **overrides: Any) -> dict[str, Any]:
    """Train a Bradley-Terry reward model; `config` is a RMTrainConfig or a YAML path, `overrides` are fields.
    Returns the summary (also written to OUT/summary.json)."""
    from tailorbench.train.trainer import train_reward_model

    if isinstance(config, RMTrainConfig):
        cfg = RMTrainConfig(**{**config.to_dict(), **{k: v for k, v in overrides.items() if v is not None}})
    else:
        cfg = load_config(config, overrides)
    from tailorbench.options import check_writable

    cfg = cfg.validate()
    check_writable("out", cfg.out, directory=True)  # before any data is read or a model loaded
    return train_reward_model(cfg, progress=progress)
