"""Snapshot tests of every stage's rendered prompt: a change to a shipped template is a visible diff here.
Refresh after an intended change with `TAILORBENCH_UPDATE_SNAPSHOTS=1 pytest tests/construction/test_prompts.py`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tailorbench.construction.calls import (
    mask_persona,
    render_answer_prompt,
    render_profile_prompt,
    render_questions_prompt,
)
from tailorbench.construction.config import BuildConfig
from tailorbench.construction.context import BuildContext

SNAPSHOTS = Path(__file__).with_name("snapshots")
PERSONA = {"Demographics": {"Age": "34", "Occupation": "backend engineer"},
           "Preference": {"Food": "vegetarian", "Answers": "short and direct"},
           "Values_and_Interests": {"Running": "training for a half marathon"}}


def _ctx() -> BuildContext:
    config = BuildConfig(model="openai:m@http://127.0.0.1:1/v1", memory=Path("m.jsonl"), out=Path("out"),
                         questions={"scenes": ["health", "travel"], "per_user": 2})
    return BuildContext(config)


def _check(name: str, messages: list[dict[str, str]]) -> None:
    text = json.dumps(messages, ensure_ascii=False, indent=1) + "\n"
    path = SNAPSHOTS / f"{name}.json"
    if os.environ.get("TAILORBENCH_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing snapshot {path}: run with TAILORBENCH_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


def test_profile_prompt() -> None:
    items = [{"ref": "m1", "id": "c1:0", "text": "I'm a 34-year-old backend engineer.", "time": "2025-04-01"},
             {"ref": "m2", "id": "c2:0", "text": "我对花生过敏。", "time": ""}]
    _check("profile", render_profile_prompt(_ctx(), "u_sam", items))


def test_questions_prompt() -> None:
    _check("questions", render_questions_prompt(_ctx(), PERSONA))


@pytest.mark.parametrize("variant", ["A1", "A2", "A3"])
def test_answer_prompts(variant: str) -> None:
    ctx = _ctx()
    persona = {"A1": PERSONA, "A2": mask_persona(ctx.config, "u_sam", PERSONA)[0], "A3": None}[variant]
    _check(f"answer_{variant}", render_answer_prompt(ctx, "What should I cook tonight?", persona, variant))
