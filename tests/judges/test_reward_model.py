"""The `rm:` judge on the shipped MiniLM (fresh one-output head) and a tiny BERT: batching, dedup, truncation
accounting, abstentions, and the runner end to end."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from tailorbench.datasets import Benchmark
from tailorbench.errors import ConfigError
from tailorbench.evaluate.results import load_results
from tailorbench.evaluate.runner import EvalConfig, run_eval
from tailorbench.judges import make_judge
from tailorbench.judges.base import JudgeOptions
from tailorbench.judges.reward_model import RewardModelJudge
from tailorbench.models.reward_hf import HFRewardModel, RewardEncoder, RewardFormat, ensure_pad_token
from tailorbench.schema import JudgeInput
from tests.helpers.rm_models import minilm_path, tiny_bert, toy_cases
from tests.helpers.truncation import COUNTED, long_cases

TRIPLES = [
    (None, "What hobby should I take up?", "Go birdwatching."),
    ("Interests: birds, hiking", "What hobby should I take up?", "Go birdwatching to see wild birds " * 5),
    ("Interests: cars", "Where should I travel?", "A long answer about a race track " * 12),
    ("名字：小雨。喜欢园艺。", "推荐一些练习听力的资源。", "可以听BBC的园艺节目。"),
]


@pytest.fixture(scope="module")
def minilm_fp32() -> HFRewardModel:
    import torch

    torch.manual_seed(0)
    return HFRewardModel(minilm_path(), precision="fp32", batch_size=3)


@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("bf16", 1e-2)])
def test_batched_equals_one_at_a_time(minilm_fp32: HFRewardModel, precision: str, tol: float) -> None:
    minilm_fp32.precision = precision
    try:
        together, _ = minilm_fp32.score(TRIPLES)
        alone = np.array([minilm_fp32.score([t])[0][0] for t in TRIPLES])
    finally:
        minilm_fp32.precision = "fp32"
    assert together.dtype == np.float64
    assert np.abs(together - alone).max() <= tol


def test_identical_inputs_scored_once(minilm_fp32: HFRewardModel) -> None:
    before = dict(minilm_fp32.encoder.truncated)
    scores, _ = minilm_fp32.score([TRIPLES[0], TRIPLES[1], TRIPLES[0], TRIPLES[0]])
    assert scores[0] == scores[2] == scores[3]
    judge = RewardModelJudge(minilm_fp32)
    a, b = TRIPLES[1][2], TRIPLES[0][2]
    inputs = [JudgeInput("c", "persona", TRIPLES[1][1], a, b, context=TRIPLES[1][0]),
              JudgeInput("c", "persona", TRIPLES[1][1], b, a, context=TRIPLES[1][0])]
    asyncio.run(judge.prepare(inputs))
    assert judge.describe()["unique_inputs_scored"] == 2
    verdicts = asyncio.run(judge.judge(inputs))
    assert {v.choice for v in verdicts} == {"A", "B"}  # the same pick in both orders: a pure score comparison
    assert minilm_fp32.encoder.truncated["inputs"] >= before["inputs"]


def test_equal_scores_abstain(minilm_fp32: HFRewardModel) -> None:
    judge = RewardModelJudge(minilm_fp32)
    same = JudgeInput("c", "none", "Which?", "The same answer.", "The same answer.")
    [verdict] = asyncio.run(judge.judge([same]))
    assert verdict.status == "abstain" and verdict.choice is None


def test_truncation_keeps_question_and_answer_and_is_counted(minilm_fp32: HFRewardModel) -> None:
    encoder = RewardEncoder(minilm_fp32.tokenizer, RewardFormat(max_length=64, answer_share=0.5, question_cap=16))
    persona = "Name: Ann. Likes gardening, roses and tulips. " * 30
    question, answer = "Which flowers should I plant?", "Plant tulips in autumn."
    [enc], flags = encoder.encode([(persona, question, answer)])
    text = minilm_fp32.tokenizer.decode(enc["input_ids"])
    assert flags.tolist() == [True] and len(enc["input_ids"]) <= 64
    assert "which flowers should i plant?" in text and "plant tulips in autumn." in text
    assert encoder.truncated["context"] == 1 and encoder.truncated["answer"] == 0
    long_answer = "Tulips are lovely. " * 40
    [enc2], flags2 = encoder.encode([(persona, question, long_answer)])
    assert flags2[0] and encoder.truncated["answer"] == 1 and len(enc2["input_ids"]) <= 64
    assert "which flowers should i plant?" in minilm_fp32.tokenizer.decode(enc2["input_ids"])
    _, flags3 = encoder.encode([(None, question, answer)])
    assert not flags3[0] and encoder.truncated["inputs"] == 2


def test_budget_policy() -> None:
    from transformers import AutoTokenizer

    encoder = RewardEncoder(AutoTokenizer.from_pretrained(minilm_path()), RewardFormat(max_length=103))
    total = 103 - encoder.overhead - 2
    kc, kq, ka = encoder.budget(1000, 20, 1000)
    assert kq == 20 and ka == (total - 20) // 2 and kc + kq + ka == total
    assert encoder.budget(10, 20, 1000) == (10, 20, total - 30)  # a short persona leaves the rest to the answer
    assert encoder.budget(0, 5, 7) == (0, 5, 7)


def test_pad_token_guard(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert(tmp_path / "m"))
    tokenizer.pad_token = None
    note = ensure_pad_token(tokenizer)
    assert tokenizer.pad_token is not None and note is not None and "pad token" in note


def test_missing_score_head_is_seeded_and_noted() -> None:
    """A checkpoint without a trained head (the bare MiniLM) gets the same fresh head on every load, whatever
    the global RNG holds, and says so; a loaded model leaves the caller's RNG where it was."""
    import torch

    torch.manual_seed(1)
    first = HFRewardModel(minilm_path(), precision="fp32")
    after_load = torch.rand(1)
    torch.manual_seed(2)
    second = HFRewardModel(minilm_path(), precision="fp32")
    assert np.allclose(first.score(TRIPLES[:2])[0], second.score(TRIPLES[:2])[0], atol=1e-6)
    assert any("no trained score head" in note for note in first.describe()["notes"])
    torch.manual_seed(1)
    assert torch.equal(torch.rand(1), after_load)  # the load drew nothing from the caller's generator


def test_spec_needs_a_model() -> None:
    with pytest.raises(ConfigError):
        make_judge("rm")
    with pytest.raises(ConfigError):
        make_judge("rm:/nonexistent/model/dir")


def test_runner_end_to_end(tmp_path: Path) -> None:
    cases = toy_cases(n_users=3, per_user=3)
    config = EvalConfig(data="toy", judge=f"rm:{tiny_bert(tmp_path / 'm')}", n_boot=50,
                        judge_options={"precision": "fp32", "max_length": 96})
    out = run_eval(config, tmp_path / "run", progress=False, benchmark=Benchmark("toy", "memory", cases))
    results = load_results(out)
    total = results["metrics"]["all"]
    assert total["n"] == 9 and total["invalid"] == 0 and total["failed"] == 0
    assert results["verdicts"]["total"] == 18


# --- before the work: truncation counted by the scorer's own encoding (issue 19) ------------------------

def test_rm_check_reuses_its_encodings_and_does_not_double_count(tmp_path: Path) -> None:
    judge = make_judge(f"rm:{tiny_bert(tmp_path / 'm')}", JudgeOptions(extra={"precision": "fp32", "max_length": 48}))
    assert isinstance(judge, RewardModelJudge)
    inputs = [JudgeInput(c.id, "none", c.question, c.chosen, c.rejected) for c in long_cases()]
    [line] = judge.check_inputs(inputs)
    assert judge.scorer.encoder.truncated["inputs"] == 0  # checking counts nothing ...
    asyncio.run(judge.prepare(inputs))
    cut = int(COUNTED.search(line).group(1))  # type: ignore[union-attr]
    assert judge.scorer.encoder.truncated["inputs"] == cut  # ... scoring counts each input once
    assert judge.warnings.count(line) == 1
