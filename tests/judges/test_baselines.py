from __future__ import annotations

import asyncio

import pytest

from tailorbench.errors import ConfigError
from tailorbench.judges import known_judges, make_judge
from tailorbench.schema import JudgeInput


def _inp(a: str, b: str, case: str = "c") -> JudgeInput:
    return JudgeInput(case_id=case, setting="persona", question="q", answer_a=a, answer_b=b)


def _run(spec: str, inputs: list[JudgeInput]) -> list[tuple[str | None, str]]:
    judge = make_judge(spec)
    return [(v.choice, v.status) for v in asyncio.run(judge.judge(inputs))]


def test_length_judges_use_raw_len_and_abstain_on_ties() -> None:
    inputs = [_inp("long answer", "short"), _inp("x", "yy"), _inp(" ab ", "abcd")]
    assert _run("longer", inputs) == [("A", "ok"), ("B", "ok"), (None, "abstain")]
    assert _run("shorter", inputs) == [("B", "ok"), ("A", "ok"), (None, "abstain")]
    assert _run("first", inputs) == [("A", "ok")] * 3


def test_random_is_seeded_and_batch_independent() -> None:
    inputs = [_inp(f"a{i}", f"b{i}", case=str(i)) for i in range(200)]
    one = _run("random", inputs)
    assert one == _run("random", inputs)
    assert one[50:] == _run("random", inputs[50:])
    assert one != _run("random:7", inputs)
    share = sum(c == "A" for c, _ in one) / len(one)
    assert 0.35 < share < 0.65


def test_unknown_judge_fails_before_work() -> None:
    with pytest.raises(ConfigError, match="unknown judge"):
        make_judge("oracle")
    assert {"random", "longer", "shorter", "first", "embedding"} <= set(known_judges())
