"""`llm:hf:PATH` with `max_length`: the prompts longer than the limit are counted with the tokenizer alone before
any call (judges.base.JudgeBase.check_inputs), and each fails alone when it is sent; API judges have no known
limit and are not counted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tailorbench.judges import make_judge
from tailorbench.judges.base import JudgeOptions, pre_work_warnings
from tailorbench.schema import JudgeInput
from tests.helpers.truncation import COUNTED, long_cases


def test_hf_llm_prompts_over_max_length_are_counted_before_any_call_and_fail_alone(tiny_hf_model_dir: Path) -> None:
    judge = make_judge(f"llm:hf:{tiny_hf_model_dir}", JudgeOptions(extra={"cache_policy": "off", "batch_size": 4}))
    model: Any = judge.model  # type: ignore[attr-defined]
    inputs = [JudgeInput(c.id, "none", c.question, c.chosen, c.rejected) for c in long_cases()]
    lengths = model.prompt_tokens([judge.messages(i) for i in inputs])  # type: ignore[attr-defined]
    limit = sorted(lengths)[2]  # some prompts are longer, not all
    model.api.max_length = limit  # the backend behind the wrapper (models/model.py) holds it
    [line] = pre_work_warnings(judge, inputs)
    assert model._lm is None  # counted with the tokenizer alone: the model is not even loaded
    cut, total, said = map(int, COUNTED.search(line).groups())  # type: ignore[union-attr]
    assert (total, said) == (6, limit) and cut == sum(n > limit for n in lengths) and 0 < cut < total
    assert "will fail" in line

    async def run() -> list[Any]:
        await judge.prepare(inputs)
        try:
            return await judge.judge(inputs)
        finally:
            await judge.aclose()

    verdicts = asyncio.run(run())
    failed = [v for v in verdicts if v.status == "failed"]
    assert len(failed) == cut  # the over-long prompts fail, the others of their batch still get a verdict
    assert all("exceeds max_length" in (v.error or "") for v in failed)
    model.api.max_length = max(lengths)
    assert pre_work_warnings(judge, inputs) == []


def test_api_llm_judge_has_no_known_limit_and_says_nothing() -> None:
    judge = make_judge("llm:openai:m@http://127.0.0.1:9/v1")
    inputs = [JudgeInput(c.id, "none", c.question, c.chosen, c.rejected) for c in long_cases()]
    assert pre_work_warnings(judge, inputs) == []
