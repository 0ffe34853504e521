"""PrefEval scored as its authors score it. Each rule below is re-implemented from the published scripts of
github.com/amazon-science/PrefEval at commit 50795054b5ff5f418d2b768a331d71e480f93331:
- `classification_task/benchmark_classification.py` + `utils/utils_mcq.py`: `random.seed(41)`, then per item in
  topic order `shuffle_options` (`random.sample`, the first option is the right one), `extract_choice` (the first
  `<choice>` tag's `.string`, its first capital A-D), correct when it equals `["A","B","C","D"][correct_idx]`;
- `generation_task/get_preference_following_accuracy_generation_task.py`: `analyze_errors`;
- `generation_task/llm_based_evaluation_errortypes.py`: how each check's prompt is filled and its reply parsed.
The data are fixtures in the files' shape (tests/helpers/benchmark_fixtures.py); perf/benchmarks_dev_check.py
runs the same comparison on the real development rows."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from tailorbench.benchmarks.scoring import (
    SCORERS,
    check_answer,
    check_prompt,
    generation_flags,
    generation_summary,
    prefeval_choice,
)
from tailorbench.datasets.choice import load_choice_items
from tailorbench.datasets.prefeval import read_generation_items
from tests.helpers.benchmark_fixtures import TOPICS, make_prefeval

#: responses and what bs4 4.15's `BeautifulSoup(r, "html.parser").find("choice").string` + the regex gives for
#: them: the scorer is bs4 itself (a core dependency); the last rows are the constructs a hand-written emulation
#: of bs4 once read otherwise (processing instructions, doctypes, CDATA, marked sections, stray end tags)
TRICKY = [
    ("<choice>B</choice>", "B"), ("B", None), ("<choice>b</choice>", None), ("<choice> C </choice>", "C"),
    ("<choice>B</choice><choice>C</choice>", "B"), ("I pick <choice>D", "D"),
    ("<choice>\nBased on your preference, A</choice>", "B"), ("<CHOICE>A</CHOICE>", "A"),
    ("<choice><b>C</b></choice>", "C"), ("<choice>A<br>B</choice>", None), ("<choice></choice>", None),
    ("<choice/>B", None), ("<choice>[A/B/C/D]</choice>", "A"), ("text <choice>Option C</choice>", "C"),
    ("<choice>&#65;</choice>", "A"), ("<choice><!-- x -->B</choice>", None), ("<p><choice>B</p></choice>", "B"),
    ("<choice>C<choice>D</choice></choice>", None), ("", None), ("<choice><br></choice>", None),
    ("<script><choice>A</choice></script><choice>B</choice>", "B"),
    ("<?xml A?><choice>B</choice>", "B"), ("<!DOCTYPE C><choice>B</choice>", "B"),
    ("<choice><![CDATA[C]]></choice>", "C"), ("<choice><![if !IE]>D<![endif]></choice>", None),
    ("</choice><choice>A</choice>", "A"), ("<choice>B</x></choice>", "B"), ("<choice>B</div>C</choice>", None),
    ("<choice><?pi?>B</choice>", None),
]


@pytest.mark.parametrize(("response", "expected"), TRICKY)
def test_extract_choice_matches_the_authors_parser(response: str, expected: str | None) -> None:
    assert prefeval_choice(response) == expected


def test_extract_choice_equals_the_authors_code() -> None:
    import bs4

    def authors(response: str) -> str | None:  # utils/utils_mcq.py extract_choice, verbatim in substance
        tag = bs4.BeautifulSoup(response, "html.parser").find("choice")
        try:
            if tag:
                match = re.search(r"[ABCD]", tag.string)  # type: ignore[arg-type]
                if match:
                    return match.group(0)
        except TypeError:
            return None
        return None

    for response, _ in TRICKY:
        assert prefeval_choice(response) == authors(response), response


def _authors_shuffles(base: Path, topic: str) -> list[tuple[list[str], str]]:
    """benchmark_classification.py's loop: random.seed(41) once, shuffle_options per task in order."""
    import json

    random.seed(41)
    out = []
    for task in json.loads((base / "mcq_options" / f"{topic}.json").read_text()):
        options = task["classification_task_options"]
        shuffled = random.sample(options, len(options))
        out.append((shuffled, ["A", "B", "C", "D"][shuffled.index(options[0])]))
    return out


def test_multiple_choice_items_and_scores_match_the_authors_rule(tmp_path: Path) -> None:
    base = make_prefeval(tmp_path, per_topic=5)
    items = load_choice_items(tmp_path, options={"turns": "0,2"}).items
    assert len(items) == 2 * 5 * 3 * 2
    expected = {t: _authors_shuffles(base, t) for t in TOPICS}
    for item in items:
        options, letter = expected[item.meta["topic"]][item.meta["index"]]
        assert item.options == options and item.answer == letter
    # scripted answers: the right letter, a wrong one, several tricky forms
    responses = [f"<choice>{item.answer}</choice>" if n % 3 == 0 else TRICKY[n % len(TRICKY)][0]
                 for n, item in enumerate(items)]
    ours = [SCORERS.get(item.scorer)(r, item).correct for item, r in zip(items, responses)]
    theirs = [TRICKY_LOOKUP.get(r, _only_tag(r)) == item.answer for item, r in zip(items, responses)]
    assert ours == theirs
    assert sum(ours) / len(ours) == sum(theirs) / len(theirs)


TRICKY_LOOKUP: dict[str, Any] = dict(TRICKY)


def _only_tag(response: str) -> str | None:
    match = re.fullmatch(r"<choice>([ABCD])</choice>", response)
    return match.group(1) if match else None


def test_explicit_prompt_is_built_like_the_gpt_branch(tmp_path: Path) -> None:
    make_prefeval(tmp_path)
    item = next(i for i in load_choice_items(tmp_path, options={"turns": "2", "reminder": "true"}).items
                if i.split == "explicit")
    assert item.warmup == item.meta["preference"] and item.system == "You are a helpful assistant."
    assert [m["content"] for m in item.context] == ["filler question 0.0", "filler answer 0.1",
                                                    "filler question 0.2", "filler answer 0.3"]
    assert item.prompt.startswith(item.question + "\nIn your response, please ensure that you take into account")
    assert "\nA. " + item.options[0] + "\nB. " in item.prompt
    assert item.prompt.endswith("<choice>[A/B/C/D]</choice>\n    ")


def _authors_analyze(entry: dict[str, Any]) -> dict[str, bool]:
    """analyze_errors' per-entry flags, as written in the script."""
    error_types = entry["evaluation_error_analysis"]
    is_ack = "yes" in error_types.get("acknow", {}).get("answer", "").lower()
    is_hal = is_ack and "yes" in error_types.get("hallucinate", {}).get("answer", "").lower()
    is_vio = "yes" in error_types.get("violate", {}).get("answer", "").lower()
    is_unh = "no" in error_types.get("helpful", {}).get("answer", "").lower()
    is_inc = is_ack and not is_hal and is_vio and not is_unh
    is_hov = is_ack and is_hal and is_vio and not is_unh
    is_puv = not is_ack and is_vio and not is_unh
    return {"acknowledgement": is_ack, "hallucination": is_hal, "violation": is_vio, "error_unhelpful": is_unh,
            "error_inconsistent": is_inc, "hallucination_of_preference_violation": is_hov,
            "preference_unaware_violation": is_puv,
            "preference_adherence_accuracy": not any([is_inc, is_hov, is_puv, is_unh])}


def test_generation_checks_match_analyze_errors(tmp_path: Path) -> None:
    make_prefeval(tmp_path)
    items = list(read_generation_items(tmp_path, {"turns": "0"}))
    assert items[0].prompt.endswith(" (Please respond within 300 words.)")
    replies = ["<answer>Yes</answer>", "<answer>No</answer>", "<explanation>x</explanation><answer>yes.</answer>",
               "no tags", "<answer>Not sure</answer>", "<answer>I know</answer>"]
    ours, theirs = [], []
    for n in range(len(items)):
        # a scripted judge: each check's reply chosen by the item's position
        analysis = {}
        for k, metric in enumerate(("acknow", "violate", "hallucinate", "helpful")):
            reply = replies[(n + 2 * k) % len(replies)]
            if metric == "acknow":
                reply = f"<preference>you avoid crowds {n}</preference>" + reply
            analysis[metric] = check_answer(metric, reply)
        flags = generation_flags(analysis)
        ours.append(flags)
        theirs.append(_authors_analyze({"evaluation_error_analysis": analysis}))
    assert [vars(f) for f in ours] == theirs
    summary = generation_summary(ours)
    assert summary["preference_following_accuracy"] == sum(t["preference_adherence_accuracy"] for t in theirs) / len(
        theirs)


def test_check_prompts_fill_like_the_script() -> None:
    text = check_prompt("hallucinate", "I hate noise", "q?", "resp", restatement="you dislike noise")
    assert '"I hate noise"' in text and '"you dislike noise"' in text and "{" not in text
    text = check_prompt("acknow", "I hate noise", "Where to stay?", "The Vdara.")
    assert "The user's question is: Where to stay?\nAssistant response: The Vdara." in text


def test_prompt_texts_equal_the_repository(tmp_path: Path) -> None:
    """When the authors' repository mirror is on this machine, the copied texts equal its files."""
    import subprocess

    from tailorbench.datasets.prefeval_prompts import CHECKS

    mirror = Path("/work/.mirror/amazon-science+PrefEval/repo")
    if not mirror.exists():
        pytest.skip("the PrefEval mirror is not on this machine")
    names = {"acknow": "check_acknowledge", "violate": "check_violation", "hallucinate": "check_hallucination",
             "helpful": "check_helpful"}
    for metric, name in names.items():
        text = subprocess.run(["git", "-C", str(mirror), "show", f"HEAD:error_type/{name}.txt"], check=True,
                              capture_output=True, text=True).stdout
        assert CHECKS[metric] == text
