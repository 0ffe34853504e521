"""Stage 1, the error taxonomy by a model: for every attribute the human majority rejected, an LLM names the
error (`templates/categorise.jinja`); an answer naming no category, or several, is an invalid category, counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.agreement.ratings import RatingSet
from tailorbench.files import Output
from tailorbench.models.base import GenParams, Message
from tailorbench.prompts import compile_template, split_messages
from tailorbench.threestage.extraction.analysis import CATEGORIES, majority_labels
from tailorbench.threestage.extraction.extract import user_turns
from tailorbench.threestage.llm import ask
from tailorbench.threestage.recentering_formats import Stage1Item, split_key

TEMPLATE = Path(__file__).with_name("templates") / "categorise.jinja"


def parse_category(text: str) -> str | None:
    low = text.lower()
    hits = [c for c in CATEGORIES if c in low or c.replace("-", " ") in low]
    return hits[0] if len(hits) == 1 else None


def categorise(items: dict[int, Stage1Item], ratings: RatingSet, model: str, out: Output,
               name: str | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Ask an LLM for the error category of every attribute the human majority rejected; write the taxonomy (the
    file output `out`)."""
    rejected = [k for k, v in majority_labels(ratings).items() if v == "rejected"]
    by_index = {it.index: it for it in items.values()}
    template, _ = compile_template(TEMPLATE, "categorise template")
    prompts: list[list[Message]] = []
    for key in rejected:
        index, _, attr = split_key(key)
        prompts.append(split_messages(template.render(turns=user_turns(by_index[index].conversations),
                                                      attribute=attr)))
    batch = ask(model, prompts, parse_category, GenParams(temperature=0.0, max_tokens=32), options)
    rater = name or model
    rows = []
    for key, ans in zip(rejected, batch.answers):
        index, user, attr = split_key(key)
        rows.append({"index": index, "user_id": user, "attribute": attr, "category": ans.value, "rater": rater,
                     "status": ans.status, "raw": ans.raw})
    out.write_jsonl(None, rows)
    return {"categoriser": rater, "out": str(out.path()), "rejected_attributes": len(rejected),
            **batch.accounting()}
