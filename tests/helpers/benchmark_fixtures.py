"""Small fixtures in the shapes of the benchmarks' published files (not their content), so the tests need nothing
outside the project. Shapes copied from the real files: PrefEval's `benchmark_dataset/` at commit 50795054,
PersonaMem v1's `questions_32k.csv` columns (its histories are not on the test machine: the history file here is a
fixture written in the documented shape `{"<shared_context_id>": [{"role", "content"}, ...]}` per line), and, for
Personalized RewardBench and PRISM (no rows on this machine), their dataset cards and the authors' loaders."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from tests.helpers.pf_data import make_mirror

TOPICS = ("travel_hotel", "shop_motors")


def _preference(topic: str, index: int) -> dict[str, str]:
    return {"preference": f"I avoid {topic} option {index} with loud crowds.",
            "question": f"Can you suggest a {topic} choice number {index}?",
            "explanation": "The assistant should avoid crowded places."}


def make_prefeval(root: Path, per_topic: int = 3, filler_turns: int = 6) -> Path:
    """A `benchmark_dataset/` folder: every topic's four files aligned by index, and a filler file."""
    base = root / "benchmark_dataset"
    for folder in ("explicit_preference", "implicit_preference/choice-based", "implicit_preference/persona-driven",
                   "mcq_options"):
        (base / folder).mkdir(parents=True, exist_ok=True)
    for topic in TOPICS:
        prefs = [_preference(topic, i) for i in range(per_topic)]
        choice = [{**p, "implicit_query": p["question"], "options": ["x", "y", "z", "w"],
                   "conversation": {"query": f"What {topic} is good?", "assistant_options": "1. x\n2. y",
                                    "user_selection": "I'll take the quiet one.",
                                    "assistant_acknowledgment": "Good choice."}} for p in prefs]
        persona = [{**p, "persona": "A nurse", "conversation": {
            str(k): {"user": f"turn {k} about {topic}", "assistant": f"reply {k}"} for k in range(3)}} for p in prefs]
        mcq = [{**p, "violation_probability": 1.0,
                "classification_task_options": [f"quiet {topic} {i}", f"loud {topic} {i}", f"party {topic} {i}",
                                                f"crowded {topic} {i}"]} for i, p in enumerate(prefs)]
        for folder, rows in (("explicit_preference", prefs), ("implicit_preference/choice-based", choice),
                             ("implicit_preference/persona-driven", persona), ("mcq_options", mcq)):
            (base / folder / f"{topic}.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    filler = [{"conversation_id": f"c{k}", "model": "m", "turn": 2, "language": "English", "redacted": False,
               "conversation": [{"role": "user", "content": f"filler question {k}.{j}"} if j % 2 == 0 else
                                {"role": "assistant", "content": f"filler answer {k}.{j}"} for j in range(4)]}
              for k in range(filler_turns // 2)]
    (base / "filtered_inter_turns.json").write_text(json.dumps(filler), encoding="utf-8")
    return base


PERSONAMEM_COLUMNS = ["persona_id", "question_id", "question_type", "topic", "context_length_in_tokens",
                      "context_length_in_letters", "distance_to_ref_in_blocks", "distance_to_ref_in_tokens",
                      "num_irrelevant_tokens", "distance_to_ref_proportion_in_context", "user_question_or_message",
                      "correct_answer", "all_options", "shared_context_id", "end_index_in_shared_context"]


def personamem_row(n: int, **over: Any) -> dict[str, Any]:
    letters = "abcd"
    options = [f"({letters[k]}) option {k} for question {n}" for k in range(4)]
    row = {"persona_id": str(n % 2), "question_id": f"q-{n}", "question_type":
           ("recall_user_shared_facts", "track_full_preference_evolution", "suggest_new_ideas")[n % 3],
           "topic": "music", "context_length_in_tokens": "1000", "context_length_in_letters": "5000",
           "distance_to_ref_in_blocks": str(n % 4), "distance_to_ref_in_tokens": "100", "num_irrelevant_tokens": "0",
           "distance_to_ref_proportion_in_context": "10.0%", "user_question_or_message": f"What did I say, {n}?",
           "correct_answer": f"({letters[n % 4]})",
           # the real file mixes both quotings of a Python list literal
           "all_options": repr(options) if n % 2 else json.dumps(options),
           "shared_context_id": f"ctx{n % 2}", "end_index_in_shared_context": str(2 + n % 3)}
    row.update(over)
    return row


def make_personamem(root: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    """`questions_32k.csv` and the history fixture `shared_contexts_32k.jsonl` beside it."""
    root.mkdir(parents=True, exist_ok=True)
    rows = rows if rows is not None else [personamem_row(n) for n in range(8)]
    path = root / "questions_32k.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=PERSONAMEM_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with (root / "shared_contexts_32k.jsonl").open("w", encoding="utf-8") as handle:
        for key in ("ctx0", "ctx1"):
            messages = [{"role": "system", "content": f"You are talking to persona {key}."}]
            messages += [{"role": "user" if j % 2 else "assistant", "content": f"{key} message {j}"}
                         for j in range(1, 6)]
            handle.write(json.dumps({key: messages}) + "\n")
    return path


def make_rewardbench(root: Path, n: int = 6) -> Path:
    """A Personalized-RewardBench folder of one category file with `n` rows (chosen: the answer that uses the
    profile)."""
    rows = [{"id": f"u{k}", "question": f"How should I plan day {k}?",
             "profile": [{"id": "p", "category": "Lifestyle", "text": "I like mornings."}],
             "rubric_aspects": [{"aspect": "mornings", "evidence": "e", "reason": "r"}], "narrative": "n",
             "category": "Lifestyle", "chosen": f"Start at 6am on day {k}, as you like.", "rejected": f"Sleep, {k}."}
            for k in range(n)]
    root.mkdir(parents=True)
    (root / "Lifestyle_and_Personal_Development_test.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def suite_data_root(root: Path) -> Path:
    """Every benchmark of the built-in `personalization` suite under one folder (`--data-root`), except PRISM."""
    make_mirror(root / "PersonaFeedback")
    make_prefeval(root / "PrefEval")
    make_personamem(root / "personamem")
    make_rewardbench(root / "personalized-rewardbench")
    return root


def kill_9_after(cmd: list[str], predictions: Path, lines: int) -> None:
    """Start `cmd`, SIGKILL it once `predictions` holds `lines` lines (the run must still be going: a run that ended
    first fails the test with its stderr)."""
    import subprocess
    import time

    import pytest

    def count() -> int:
        return len(predictions.read_text().splitlines()) if predictions.exists() else 0

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while proc.poll() is None and count() < lines:
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.fail(f"the run ended (rc {proc.returncode}) before it could be killed: {proc.communicate()[1]}")
    proc.kill()
    proc.wait()
