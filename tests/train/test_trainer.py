"""Bradley-Terry training on a tiny BERT built from a config: the loss falls, the checkpoint reloads as an
`rm:` judge with the same scores, the loss equals TRL's RewardTrainer loss, truncation is counted, and the
CLI works end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from tailorbench.api import train_rm as train_rm_verb
from tailorbench.cli.app import app
from tailorbench.datasets import write_native
from tailorbench.errors import ConfigError
from tailorbench.models.reward_hf import HFRewardModel
from tailorbench.train.config import RMTrainConfig, load_config
from tailorbench.train.data import context_of
from tailorbench.train.trainer import bt_loss
from tests.helpers.rm_models import tiny_bert, toy_cases


def train_rm(**fields: Any) -> dict[str, Any]:
    """`tb.train_rm`'s summary.json, as the dict these tests read."""
    return train_rm_verb(**fields).to_dict()


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    root = tmp_path_factory.mktemp("rm")
    data = root / "pairs.jsonl"
    write_native(toy_cases(n_users=8, per_user=6), data)
    out = root / "out"
    summary = train_rm(model=tiny_bert(root / "base"), data=str(data), out=str(out), eval_fraction=0.25,
                       max_length=64, batch_size=8, epochs=6, learning_rate=3e-3, warmup_ratio=0.0,
                       precision="fp32", log_every=1, n_boot=20, center_coef=0.01, length_feature=True, seed=0)
    return out, summary, data


def test_loss_falls(trained: tuple[Path, dict, Path]) -> None:
    out, summary, _ = trained
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in lines if r["event"] == "train"]
    assert len(losses) == summary["steps"] == 6 * 5  # 36 train pairs / 8 per batch = 5 steps per epoch
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    evals = [r for r in lines if r["event"] == "eval"]
    assert [e["epoch"] for e in evals] == [0, 1, 2, 3, 4, 5, 6]  # 0: the longer baseline
    assert set(evals[-1]["tiers"]) >= {"general/easy", "general/medium", "general/hard", "all"}
    assert evals[-1]["tiers"]["all"]["accuracy"] == 1.0  # the hobby rule generalises to unseen users


def test_checkpoint_reloads_with_the_same_scores(trained: tuple[Path, dict, Path]) -> None:
    out, summary, _ = trained
    held = toy_cases(n_users=8, per_user=6)
    triples = [(context_of(c, "persona"), c.question, a) for c in held[:12] for a in (c.chosen, c.rejected)]
    reloaded = HFRewardModel(str(out), precision="fp32")
    assert reloaded.fmt.length_weight == summary["format"]["length_weight"] != 0.0
    assert reloaded.fmt.max_length == 64
    scores, _ = reloaded.score(triples)
    again, _ = HFRewardModel(str(out), precision="fp32").score(triples)
    assert np.allclose(scores, again, atol=1e-6)
    # the last epoch's evaluation ran on the in-memory model: the saved one gives the same verdict scores
    from tailorbench.evaluate.results import read_predictions

    row = read_predictions(out / "eval" / "epoch-6")[0]
    case = next(c for c in toy_cases(n_users=8, per_user=6) if c.id == row["case_id"])
    pair, _ = reloaded.score([(context_of(case, "persona"), case.question, case.chosen),
                              (context_of(case, "persona"), case.question, case.rejected)])
    expected = {"A": pair[0], "B": pair[1]} if row["order"] == "AB" else {"A": pair[1], "B": pair[0]}
    assert row["scores"] == pytest.approx(expected, abs=1e-5)


def test_loss_equals_trl_reward_trainer(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    from datasets import Dataset  # type: ignore[import-untyped]

    path = tiny_bert(tmp_path / "m")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    rows = [{"chosen_ids": tokenizer("good answer about chess")["input_ids"],
             "rejected_ids": tokenizer("bad")["input_ids"]},
            {"chosen_ids": tokenizer("a b c")["input_ids"], "rejected_ids": tokenizer("d e f g h")["input_ids"]}]
    args = RewardConfig(output_dir=str(tmp_path / "trl"), center_rewards_coefficient=0.05, report_to=[],
                        gradient_checkpointing=False, bf16=False, use_cpu=True, max_length=32)
    trainer = RewardTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                            processing_class=tokenizer)
    batch = trainer.data_collator(rows)
    model.eval()
    with torch.no_grad():
        trl_loss = trainer.compute_loss(model, dict(batch))
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.reshape(-1)
        ours = bt_loss(logits[:2], logits[2:], margin=0.0, center_coef=0.05)
    assert float(ours) == pytest.approx(float(trl_loss), abs=1e-6)


def test_truncation_counted(trained: tuple[Path, dict, Path], tmp_path: Path) -> None:
    cases = toy_cases(n_users=4, per_user=2)
    long = [c.model_copy(update={"persona": {"About": "likes long walks " * 50}}) for c in cases]
    write_native(long, tmp_path / "long.jsonl")
    summary = train_rm(model=tiny_bert(tmp_path / "m"), data=str(tmp_path / "long.jsonl"), out=str(tmp_path / "o"),
                       max_length=32, batch_size=4, max_steps=1, eval_fraction=0.0, precision="fp32")
    truncation = summary["truncation"]
    # 8 distinct chosen + 2 distinct rejected triples (the shared persona and questions make repeats)
    assert truncation["truncated_inputs"] == truncation["unique_inputs"] == 10
    assert truncation["by_segment"]["context"] == 10


def test_config_yaml_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"learning_rate": 1e-4, "margin": 0.5, "data": "d"}))
    cfg = load_config(path, {"margin": 1.0, "out": "o", "epochs": None})
    assert (cfg.learning_rate, cfg.margin, cfg.epochs, cfg.data, cfg.out) == (1e-4, 1.0, 1, "d", "o")
    path.write_text(yaml.safe_dump({"learnin_rate": 1e-4}))
    with pytest.raises(ConfigError, match="learnin_rate"):
        load_config(path)
    with pytest.raises(ConfigError, match="flip_rule"):
        RMTrainConfig(data="d", out="o", flip_rule="coin").validate()


def test_freeze_layers_trains_only_the_upper_layers(trained: tuple[Path, dict, Path], tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    _, _, data = trained
    base = tiny_bert(tmp_path / "base")
    out = tmp_path / "frozen"
    summary = train_rm(model=base, data=str(data), out=str(out), max_length=64, batch_size=8, max_steps=3,
                       learning_rate=3e-3, warmup_ratio=0.0, precision="fp32", eval_each_epoch=False,
                       freeze_layers=1, seed=0)
    before, after = load_file(str(Path(base) / "model.safetensors")), load_file(str(out / "model.safetensors"))
    frozen = [n for n in before if ".embeddings." in n or ".encoder.layer.0." in n]
    trained_ = [n for n in before if ".encoder.layer.1." in n or n.startswith("classifier.")]
    assert frozen and trained_
    assert all(torch.equal(before[n], after[n]) for n in frozen)
    assert all(not torch.equal(before[n], after[n]) for n in trained_ if n.endswith(".weight"))
    assert summary["frozen_parameters"] == sum(before[n].numel() for n in frozen)
    assert summary["steps"] == 3 and summary["step_seconds_median"] > 0
    with pytest.raises(ConfigError, match="exceeds"):
        train_rm(model=base, data=str(data), out=str(tmp_path / "x"), max_steps=1, freeze_layers=3,
                 eval_each_epoch=False, precision="fp32")
    with pytest.raises(ConfigError, match="freeze_layers needs train_scope"):
        RMTrainConfig(data="d", out="o", freeze_layers=2, train_scope="features", features=["length"]).validate()


def test_cli_end_to_end(trained: tuple[Path, dict, Path], tmp_path: Path) -> None:
    _, _, data = trained
    runner = CliRunner()
    out = tmp_path / "cli"
    result = runner.invoke(app, ["train-rm", "--data", str(data), "--out", str(out), "--model",
                                 tiny_bert(tmp_path / "m"), "--max-steps", "2", "--batch-size", "4",
                                 "--max-length", "48", "--precision", "fp32", "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["steps"] == 2
    assert (out / "model.safetensors").is_file() and (out / "tailorbench_rm.json").is_file()
    again = runner.invoke(app, ["train-rm", "--data", str(data), "--out", str(out), "--no-progress"])
    assert again.exit_code == 2 and "already holds" in again.output
    bad = runner.invoke(app, ["train-rm", "--data", str(data), "--out", str(tmp_path / "x"), "--setting", "rag"])
    assert bad.exit_code == 2 and "setting" in bad.output


def test_progress_shows_no_bar_without_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """A features-only run has no optimizer steps: no live bar is started (nothing would stop it), and notes
    still reach stderr."""
    from tailorbench.train.trainer import _progress

    bar = _progress(0, True)
    assert not bar.enabled and not hasattr(bar, "_bar")
    bar.note("cross-fit done")
    bar.close()
    assert "cross-fit done" in capsys.readouterr().err
