"""PersonaMem scored as its authors score it: `Evaluation.extract_answer` and `run_evaluation`'s context slice of
github.com/bowen-upenn/PersonaMem `inference_standalone_openai.py` (commit 041d82ac6170d3e62c8f105d16df357dced48d73),
re-implemented below from the published script, compared item by item with tailorbench's scorer on a fixture in
the shape of PersonaMem v1's `questions_32k.csv` and a history fixture in the documented shape."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tailorbench.benchmarks.scoring import SCORERS
from tailorbench.datasets.choice import load_choice_items
from tests.helpers.authors_rules import authors_extract
from tests.helpers.benchmark_fixtures import make_personamem


def tricky(letter: str) -> list[str]:
    """Answers to a question whose right option is `letter` (lower case)."""
    other = "b" if letter != "b" else "c"
    return [
        f"<final_answer>({letter})", f"<final_answer>({letter})</final_answer>", f"<final_answer> {letter.upper()}",
        f"({letter}) or ({other})", f"<final_answer>({letter}) ({other})", "I cannot tell.", "",
        f"Thinking ({other})... <final_answer>({letter})", f"<final_answer>({other})<final_answer>({letter})",
        f"<final_answer>({letter})<final_answer>({other})", f"My answer: {letter}", f"a {letter} d",
        f"<final_answer>({letter})</final_answer> trailing text", f"<final_answer>\n\n({letter.upper()})\n",
        "<final_answer>", f"option {letter}) is it", f"({letter})</final_answer>",
    ]


def test_extraction_matches_the_authors_rule_on_tricky_answers(tmp_path: Path) -> None:
    make_personamem(tmp_path)
    items = load_choice_items(tmp_path).items
    assert len(items) == 8
    ours, theirs = [], []
    for item in items:
        correct_answer = f"({item.answer.lower()})"  # the CSV's own spelling
        for response in tricky(item.answer.lower()):
            score = SCORERS.get(item.scorer)(response, item)
            expected, predicted = authors_extract(response, correct_answer)
            assert (score.correct, score.parsed) == (expected, predicted), response
            ours.append(score.correct)
            theirs.append(expected)
    assert sum(ours) / len(ours) == sum(theirs) / len(theirs)
    assert 0 < sum(ours) < len(ours)


def test_items_are_built_like_run_evaluation(tmp_path: Path) -> None:
    path = make_personamem(tmp_path)
    contexts = {}
    for line in (tmp_path / "shared_contexts_32k.jsonl").read_text().splitlines():
        contexts.update(json.loads(line))
    rows = list(csv.DictReader(path.open(newline="", encoding="utf-8")))
    items = load_choice_items(path).items
    instruction = ("Find the most appropriate model response and give your final answer (a), (b), (c), or (d) "
                   "after the special token <final_answer>.")
    for row, item in zip(rows, items):
        assert item.context == contexts[row["shared_context_id"]][: int(row["end_index_in_shared_context"])]
        assert item.prompt == row["user_question_or_message"] + "\n\n" + instruction + "\n\n" + row["all_options"]
        assert item.split == row["question_type"] and item.tier == "32k"
        assert f"({item.answer.lower()})" == row["correct_answer"]
