"""Check: the PrefEval and PersonaMem readers and scorers on the real development rows of ../shared/data, against
the authors' rules recomputed here from their published scripts (PrefEval commit 50795054: random.seed(41) +
random.sample per item, extract_choice; PersonaMem commit 041d82ac: extract_answer). Not a test: the tests use
fixtures of the same shapes and must pass without ../shared/data.

PersonaMem's histories are not on this machine, so the history file here is written in the documented shape
(`{"<shared_context_id>": [{"role", "content"}, ...]}` per line) with placeholder messages, long enough for every
`end_index_in_shared_context`; it checks the slicing and scoring, not the histories' content.

Run: .venv/bin/python perf/benchmarks_dev_check.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tailorbench.benchmarks.scoring import SCORERS, personamem_extract
from tailorbench.datasets import load_benchmark
from tailorbench.datasets.choice import load_choice_items

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the authors' rules the tests use
from tests.helpers.authors_rules import authors_extract

#: answers whose extract_choice value was taken from bs4 4.15 (tests/benchmarks/test_prefeval_scoring.py)
PREFEVAL_ANSWERS = {"<choice>{x}</choice>": "{x}", "I pick <choice>{x}": "{x}", "<choice>{x}<br>B</choice>": None,
                    "{x}": None, "<choice><b>{x}</b></choice>": "{x}"}


def prefeval(root: Path) -> None:
    items = load_choice_items(root, options={"turns": "0,10"}).items
    base = root / "benchmark_dataset"
    agree = 0
    for topic in sorted(p.stem for p in (base / "mcq_options").glob("*.json")):
        random.seed(41)
        for index, task in enumerate(json.loads((base / "mcq_options" / f"{topic}.json").read_text())):
            options = task["classification_task_options"]
            shuffled = random.sample(options, len(options))
            letter = "ABCD"[shuffled.index(options[0])]
            mine = [i for i in items if i.meta["topic"] == topic and i.meta["index"] == index]
            agree += all(i.options == shuffled and i.answer == letter for i in mine) and len(mine) == 6
    scored = same = 0
    for item in items:
        for template, expected in PREFEVAL_ANSWERS.items():
            response = template.replace("{x}", item.answer)
            theirs = expected.replace("{x}", item.answer) if expected else None
            ours = SCORERS.get(item.scorer)(response, item)
            same += ours.choice == theirs and ours.correct == (theirs == item.answer)
            scored += 1
    pairs = load_benchmark(root, options={"turns": "0"})
    print(f"prefeval: {len(items)} items (160 preferences x 3 forms x 2 turn counts), shuffles equal to the "
          f"authors' for {agree} of 160 preferences, {same} of {scored} scripted answers scored alike; pair view "
          f"{len(pairs.cases)} cases; right letters {dict(sorted(Counter(i.answer for i in items).items()))}")


def personamem(folder: Path) -> None:
    rows = list(csv.DictReader((folder / "questions_32k.csv").open(newline="", encoding="utf-8")))
    need: dict[str, int] = {}
    for row in rows:
        key = row["shared_context_id"]
        need[key] = max(need.get(key, 0), int(row["end_index_in_shared_context"]) + 1)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "questions_32k.csv").write_bytes((folder / "questions_32k.csv").read_bytes())
        with (work / "shared_contexts_32k.jsonl").open("w", encoding="utf-8") as handle:
            for key, length in need.items():
                messages = [{"role": "user" if n % 2 else "assistant", "content": f"placeholder {n}"}
                            for n in range(length)]
                handle.write(json.dumps({key: messages}) + "\n")
        items = load_choice_items(work).items
    answers = ["<final_answer>({x})", "({x}) or (b)", "<final_answer>{X}</final_answer>", "none", "({x}) (a)",
               "<final_answer>(a)<final_answer>({x})", "thinking... <final_answer>"]
    same = total = correct = 0
    for row, item in zip(rows, items):
        assert len(item.context) == int(row["end_index_in_shared_context"])
        for template in answers:
            response = template.replace("{x}", item.answer.lower()).replace("{X}", item.answer)
            ours = SCORERS.get(item.scorer)(response, item)
            theirs = authors_extract(response, row["correct_answer"])
            same += (ours.correct, ours.parsed) == theirs
            correct += theirs[0]
            total += 1
    assert personamem_extract("<final_answer>(c)", "(c)") == (True, "(c)")
    print(f"personamem: {len(items)} questions of {len(rows)} rows, {same} of {total} scripted answers scored "
          f"alike (authors' rule: {correct} right); question types "
          f"{dict(Counter(i.split for i in items).most_common())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    args = parser.parse_args()
    prefeval(args.data / "prefeval-dev")
    personamem(args.data / "personamem-dev")


if __name__ == "__main__":
    main()
