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
    from tailorbench.files import claim_output

    cfg = cfg.validate()
    assert cfg.out is not None  # validate() requires it
    # the output rule before any data is read or a model loaded: never the data, the base model or the config
    dest = claim_output("out", cfg.out, inputs=[cfg.data, cfg.eval_data, cfg.model,
                                                None if isinstance(config, RMTrainConfig) else config],
                        directory=True, made_by="tailor train-rm")
    return train_reward_model(cfg, dest, progress=progress)
