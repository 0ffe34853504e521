"""A two-output (chosen/rejected) sequence classifier as a reward model: its reward is softmax(logits)[-1], the
probability of the last output, as Personalized RewardBench's evaluation/pointwise.py scores such models; a
`max_length` of 8192 (the authors' budget) is accepted and cut, with a note, at what the model holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailorbench.judges import make_judge
from tailorbench.judges.base import JudgeOptions
from tailorbench.judges.reward_model import RewardModelJudge
from tailorbench.models.reward_hf import HFRewardModel, pad_batch
from tests.helpers.rm_models import tiny_bert

TRIPLES = [
    (None, "What hobby should I take up?", "Go birdwatching."),
    ("Interests: birds, hiking", "What hobby should I take up?", "Go birdwatching to see wild birds " * 5),
    ("Interests: cars", "Where should I travel?", "A race track."),
]


@pytest.fixture(scope="module")
def two_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    return tiny_bert(tmp_path_factory.mktemp("rm2") / "model", seed=3, num_labels=2)


def test_two_output_head_scores_softmax_of_the_last(two_output: str) -> None:
    import torch

    scorer = HFRewardModel(two_output, precision="fp32", batch_size=2, max_length=8192)
    assert scorer.outputs == 2 and scorer.describe()["head"] == "softmax(logits)[-1]"
    assert any("softmax" in n for n in scorer.notes) and any("8192" in n for n in scorer.notes)
    scores, _ = scorer.score(TRIPLES)
    # the same inputs through the model by hand: softmax over the two logits, the last one
    encoded, _ = scorer.encoder.encode(TRIPLES)
    with torch.inference_mode():
        logits = scorer.model(**pad_batch(encoded, scorer.tokenizer.pad_token_id)).logits.float()
    want = torch.softmax(logits, dim=-1)[:, -1].numpy()
    assert logits.shape == (3, 2)
    np.testing.assert_allclose(scores, want, atol=1e-5)
    assert np.all((scores > 0) & (scores < 1))


def test_rm_judge_takes_max_length_8192(two_output: str) -> None:
    judge = make_judge(f"rm:{two_output}", JudgeOptions(extra={"max_length": "8192", "precision": "fp32"}))
    assert isinstance(judge, RewardModelJudge)
    assert judge.scorer.fmt.max_length == 128  # cut at the tiny model's positions, and said so
    assert any("8192" in n for n in judge.scorer.notes)


def test_one_output_checkpoint_unchanged(tmp_path: Path) -> None:
    scorer = HFRewardModel(tiny_bert(tmp_path / "m1", num_labels=1), precision="fp32")
    assert scorer.outputs == 1 and scorer.describe()["head"] == "logit"


def test_more_outputs_refused(tmp_path: Path) -> None:
    from tailorbench.errors import ConfigError

    with pytest.raises(ConfigError, match="3 outputs"):
        HFRewardModel(tiny_bert(tmp_path / "m3", num_labels=3), precision="fp32")
