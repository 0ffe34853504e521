"""How `tailor train-rm` rebuilds the training content of a checkpoint written before training_content.json
existed (registered in `leakage.RECONSTRUCTORS`, which the `rm:` judge asks): the hashes themselves and the
overlap classes live in `tailorbench.leakage`, below evaluate/ and train/."""

from __future__ import annotations

from pathlib import Path

from tailorbench.leakage import CONTENT_FILE, RECONSTRUCTORS, TrainingContent


@RECONSTRUCTORS.register("train-rm")
def reconstruct(directory: Path) -> tuple[TrainingContent | None, str | None]:
    """For a `tailor train-rm` checkpoint written before training_content.json existed: its training pairs
    rebuilt from its train_config.yaml (the same loading, split and cleaning, all seeded). Returns (content,
    None), or (None, why not) when the config or its data cannot be read."""
    from tailorbench.errors import TailorError
    from tailorbench.train.config import load_config
    from tailorbench.train.data import prepare_data

    config = Path(directory) / "train_config.yaml"
    if not config.is_file():
        return None, f"{directory} has no {CONTENT_FILE} and no train_config.yaml: its training data is unknown"
    try:
        cfg = load_config(config)
        train, _, _ = prepare_data(cfg)
    except (TailorError, OSError, ValueError) as exc:
        return None, (f"{directory} predates {CONTENT_FILE} and its training data ({config}) cannot be rebuilt "
                      f"({exc}): overlap with this data is not checked")
    return TrainingContent.of_cases(train, f"{config} (rebuilt: the checkpoint predates {CONTENT_FILE})",
                                    setting=cfg.setting, data=cfg.data, trained_by="tailor train-rm"), None
