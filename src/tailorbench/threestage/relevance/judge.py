"""LLM relevance votes (stage 2) through models/: one yes/no question per (prompt, attribute).

Why per attribute: the paper's judges label each attribute on its own, and one parse failure then costs one vote,
not a whole item. An answer that is neither yes nor no is an invalid vote, written as `relevant: null` with its
raw text and counted (the analysis counts it as a missing rating). The prompt is `templates/judge.jinja`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.files import Output
from tailorbench.models.base import GenParams, Message
from tailorbench.prompts import compile_template, split_messages
from tailorbench.threestage.llm import ask
from tailorbench.threestage.recentering_formats import RelevanceItem, write_votes

TEMPLATE = Path(__file__).with_name("templates") / "judge.jinja"
_YES = {"yes", "y", "relevant", "是", "相关", "有关"}
_NO = {"no", "n", "irrelevant", "否", "不相关", "无关", "不是"}


def parse_yes_no(text: str) -> bool | None:
    """YES / NO (or 是 / 否) as the first word; anything else is invalid, never guessed."""
    match = re.match(r"\s*[\*\"'`(\[]*([A-Za-z]+|[\u4e00-\u9fff]+)", text)
    if not match:
        return None
    word = match.group(1).lower()
    if word in _YES:
        return True
    if word in _NO:
        return False
    return None


def prompts(items: Sequence[RelevanceItem]) -> list[list[Message]]:
    """One conversation per attribute of every item, in item order."""
    template, _ = compile_template(TEMPLATE, "relevance judge template")
    return [split_messages(template.render(attribute=a, prompt=it.prompt)) for it in items for a in it.attributes]


def judge_relevance(
    items: Sequence[RelevanceItem],
    model: str,
    out: Output,
    name: str | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Ask `model` about every attribute of every item and write its votes (the file output `out`); returns the
    accounting."""
    batch = ask(model, prompts(items), parse_yes_no, GenParams(temperature=0.0, max_tokens=8), options)
    answers = iter(batch.answers)
    votes = []
    for it in items:
        entries = []
        for a in it.attributes:
            ans = next(answers)
            entry: dict[str, Any] = {"attribute": a, "relevant": ans.value, "raw_answer": ans.raw}
            if ans.status != "ok":
                entry["status"] = ans.status
                if ans.error:
                    entry["error"] = ans.error
            entries.append(entry)
        votes.append(entries)
    rater = name or model
    write_votes(out, rater, items, votes)
    return {"model": model, "name": rater, "out": str(out.path()), **batch.accounting()}
