"""Stage-3 LLM judge ratings through models/: how much better the personalized answer is than the generic one
for one attribute, on the 1..5 scale humans use; written in the long format (label -2..2, group "model") so they
meet the human export item by item. Unparseable answers are written as null labels (counted missing). The prompt
is `templates/judge.jinja`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tailorbench.files import Output
from tailorbench.models.base import GenParams, Message
from tailorbench.prompts import compile_template, split_messages
from tailorbench.threestage.incorporation.analysis import ABTask
from tailorbench.threestage.llm import ask
from tailorbench.threestage.recentering_formats import ATTR_SEP

TEMPLATE = Path(__file__).with_name("templates") / "judge.jinja"


def parse_rating(text: str) -> int | None:
    """The first digit 1..5 standing alone at the start of the answer; anything else is invalid."""
    match = re.match(r"\s*\**\s*([1-5])(?!\d)", text)
    return int(match.group(1)) if match else None


def judge_ab(tasks: dict[str, ABTask], model: str, out: Output, name: str | None = None,
             options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The judge's rating of every (task, attribute), written in the long format as the file output `out`;
    returns the accounting."""
    keys = [(tid, key) for tid, t in tasks.items() for key in t.attributes]
    template, _ = compile_template(TEMPLATE, "A/B judge template")
    prompts: list[list[Message]] = [
        split_messages(template.render(attribute=tasks[tid].attributes[key], prompt=tasks[tid].prompt,
                                       generic=tasks[tid].generic, personalized=tasks[tid].personalized))
        for tid, key in keys
    ]
    batch = ask(model, prompts, parse_rating, GenParams(temperature=0.0, max_tokens=8), options)
    rater = name or model
    out.write_jsonl(None, ({"item": f"{tid}{ATTR_SEP}{key}", "rater": rater,
                            "label": None if ans.value is None else ans.value - 3, "group": "model"}
                           for (tid, key), ans in zip(keys, batch.answers)))
    return {"judge": rater, "out": str(out.path()), **batch.accounting()}
