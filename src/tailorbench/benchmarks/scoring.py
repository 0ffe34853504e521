"""The benchmarks' own scoring rules, each as its authors' published script applies it (cited per function), and
`SCORERS`, the registry a `ChoiceItem.scorer` names (entry-point group `tailorbench.scorers`).

A scorer reads one response to one item — the reply as the model wrote it, `<think>` blocks included, as the
authors' scripts read it — and says which option it picked (None: no valid pick) and whether that is right; the
rules differ on purpose (PrefEval takes the first `<choice>` tag, PersonaMem wants exactly one letter after the
last `<final_answer>`), so each benchmark keeps its own. PrefEval's tags are read by BeautifulSoup's
`html.parser` tree itself (beautifulsoup4, a core dependency), as its scripts read them.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tailorbench.datasets.choice import ChoiceItem
from tailorbench.datasets.prefeval_prompts import CHECKS
from tailorbench.judges.verdict_rules import authors_pairwise_summary as authors_pairwise_summary
from tailorbench.registry import Registry


@dataclass(frozen=True)
class ChoiceScore:
    """What a scorer read: the option letter picked (None: no valid pick) and whether it is the right one."""

    choice: str | None
    correct: bool
    #: the part of the response the rule looked at (PersonaMem's `predicted_answer`)
    parsed: str | None = None


Scorer = Callable[[str, ChoiceItem], ChoiceScore]
SCORERS: Registry[Scorer] = Registry("benchmark scorer", "tailorbench.scorers")


def first_tag(text: str, name: str) -> Any:
    """`BeautifulSoup(text, "html.parser").find(name)`: the first tag called `name`, or None (bs4's warnings that
    a reply looks like a URL or a file name are not the reader's business)."""
    from bs4 import BeautifulSoup

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BeautifulSoup(text, "html.parser").find(name)


def tag_text(text: str, name: str) -> str:
    """The stripped `.text` of the first `<name>` tag, `""` when there is none (PrefEval's
    `parse_explanation_and_answer`)."""
    tag = first_tag(text, name)
    return str(tag.text).strip() if tag is not None else ""


def prefeval_choice(response: str) -> str | None:
    """PrefEval's `extract_choice` (utils/utils_mcq.py, commit 50795054): the first `<choice>` tag's `.string`,
    then its first capital A-D; None when there is no tag, the tag holds more than one node, or no letter."""
    tag = first_tag(response, "choice")
    content = tag.string if tag is not None else None
    if content is None:
        return None
    match = re.search(r"[ABCD]", str(content))
    return match.group(0) if match else None


@SCORERS.register("prefeval-choice")
def score_prefeval(response: str, item: ChoiceItem) -> ChoiceScore:
    """benchmark_classification.py: correct when the extracted choice equals the shuffled right letter."""
    choice = prefeval_choice(response)
    return ChoiceScore(choice, choice == item.answer, choice)


def personamem_options(text: str) -> set[str]:
    """`_extract_only_options`: the letters a-d in parentheses, or else the lone letters a-d (lower-cased)."""
    text = text.lower()
    in_parens = re.findall(r"\(([a-d])\)", text)
    return set(in_parens) if in_parens else set(re.findall(r"\b([a-d])\b", text))


def personamem_extract(response: str, correct_answer: str) -> tuple[bool, str]:
    """PersonaMem's `Evaluation.extract_answer` (inference_standalone_openai.py of bowen-upenn/PersonaMem,
    commit 041d82ac): the text after the last `<final_answer>` (a closing tag cut off) must name exactly the
    right option; failing that, the whole response must. Returns (correct, the text after the tag)."""
    correct = correct_answer.lower().strip("() ")
    predicted = response.strip()
    if "<final_answer>" in predicted:
        predicted = predicted.split("<final_answer>")[-1].strip()
    if predicted.endswith("</final_answer>"):
        predicted = predicted[:-len("</final_answer>")].strip()
    if personamem_options(predicted) == {correct}:
        return True, predicted
    return personamem_options(response) == {correct}, predicted


@SCORERS.register("personamem")
def score_personamem(response: str, item: ChoiceItem) -> ChoiceScore:
    correct, predicted = personamem_extract(response, item.answer)
    picked = personamem_options(predicted)
    choice = next(iter(picked)).upper() if len(picked) == 1 else None
    return ChoiceScore(item.answer if correct else choice, correct, predicted)


def personamem_extract_214bc36(response: str, correct_answer: str) -> tuple[bool, str]:
    """PersonaMem's `Evaluation.extract_answer` at commit 214bc36 of bowen-upenn/PersonaMem (the other upstream
    version): the text after the last `<final_answer>` (a closing tag cut off); every letter in it, with or
    without parentheses (`\\(?([a-zA-Z])\\)?`), counts as an option mentioned; right when the correct letter is
    mentioned and no other letter is. Returns (correct, the text after the tag)."""
    predicted = response.strip()
    if "<final_answer>" in predicted:
        predicted = predicted.split("<final_answer>")[-1].strip()
    if predicted.endswith("</final_answer>"):
        predicted = predicted[:-len("</final_answer>")].strip()
    mentioned = [m.lower() for m in re.findall(r"\(?([a-zA-Z])\)?", predicted)]
    found = re.search(r"\(?([a-zA-Z])\)?", correct_answer)
    if found is None:  # upstream raises (AttributeError) and skips the row
        return False, predicted
    letter = found.group(1)
    wrong = any(chr(i).lower() in mentioned for i in range(65, 91) if chr(i) != letter.upper())
    return letter.lower() in mentioned and not wrong, predicted


@SCORERS.register("personamem-214bc36")
def score_personamem_214bc36(response: str, item: ChoiceItem) -> ChoiceScore:
    correct, predicted = personamem_extract_214bc36(response, item.answer)
    letters = {m.lower() for m in re.findall(r"\(?([a-zA-Z])\)?", predicted)}
    choice = next(iter(letters)).upper() if len(letters) == 1 else None
    return ChoiceScore(item.answer if correct else choice, correct, predicted)


# -- PrefEval's generation task ------------------------------------------------------------------------------

#: the checks in the order `llm_based_evaluation_errortypes.py` asks them
CHECK_ORDER = ("acknow", "violate", "hallucinate", "helpful")


def check_prompt(metric: str, preference: str, question: str, response: str, restatement: str = "") -> str:
    """The user message of one check, filled as the evaluation script fills it (plain `str.replace`)."""
    text = CHECKS[metric]
    if metric == "acknow":
        return text.replace("{end_generation}", response).replace("{question}", question)
    if metric in ("violate", "helpful"):
        return (text.replace("{preference}", preference).replace("{question}", question)
                .replace("{end_generation}", response))
    return text.replace("{preference}", preference).replace("{assistant_restatement}", restatement)


def check_answer(metric: str, output: str) -> dict[str, str]:
    """A check's reply as the script stores it: `answer` and `extract_pref` (acknowledgement) or `explanation`
    (the others), each the stripped text of its first tag."""
    if metric == "acknow":
        return {"answer": tag_text(output, "answer"), "extract_pref": tag_text(output, "preference")}
    return {"explanation": tag_text(output, "explanation"), "answer": tag_text(output, "answer")}


@dataclass(frozen=True)
class GenerationScore:
    """`analyze_errors`'s flags for one response."""

    acknowledgement: bool
    hallucination: bool
    violation: bool
    error_unhelpful: bool
    error_inconsistent: bool
    hallucination_of_preference_violation: bool
    preference_unaware_violation: bool
    preference_adherence_accuracy: bool


def generation_flags(checks: Mapping[str, Mapping[str, str]]) -> GenerationScore:
    """get_preference_following_accuracy_generation_task.py `analyze_errors` for one entry (substring tests on
    the lower-cased answers, as there: `"yes" in ...`, and `"no" in ...` for helpfulness)."""

    def said(metric: str, word: str) -> bool:
        return word in checks.get(metric, {}).get("answer", "").lower()

    ack = said("acknow", "yes")
    hallucination = ack and said("hallucinate", "yes")
    violation = said("violate", "yes")
    unhelpful = said("helpful", "no")
    inconsistent = ack and not hallucination and violation and not unhelpful
    hallucinated_violation = ack and hallucination and violation and not unhelpful
    unaware = not ack and violation and not unhelpful
    follows = not any([inconsistent, hallucinated_violation, unaware, unhelpful])
    return GenerationScore(ack, hallucination, violation, unhelpful, inconsistent, hallucinated_violation, unaware,
                           follows)


def generation_summary(scores: Iterable[GenerationScore]) -> dict[str, float | int]:
    """The script's counts and its `Preference Following Accuracy` (a share, not a percentage)."""
    rows = list(scores)
    counts: dict[str, float | int] = {name: sum(getattr(s, name) for s in rows)
                                      for name in GenerationScore.__dataclass_fields__}
    counts["total"] = len(rows)
    counts["preference_following_accuracy"] = (counts["preference_adherence_accuracy"] / len(rows)) if rows else 0.0
    return counts


# -- Personalized RewardBench --------------------------------------------------------------------------------


def rewardbench_pairwise_choice(output: str) -> tuple[str, bool]:
    """evaluation/pairwise.py of Martin-qyma/Personalized-RewardBench (commit a5c6814d): the text after the last
    `</think>`, quotes and asterisks removed; the first letter after `result:` (case-insensitive) picks A or B.
    Returns (pick, parse_failed): an unparsed output counts as `A`, as there."""
    text = output.strip().split("</think>")[-1].strip().replace('"', "").replace("*", "").strip()
    if "result:" in text.lower():
        section = text.lower().split("result:")[1].strip()
        if section.startswith("a"):
            return "A", False
        if section.startswith("b"):
            return "B", False
    return "A", True


def authors_pairwise_verdicts(rows: Iterable[Mapping[str, object]],
                              orders: Mapping[str, str]) -> list[tuple[bool, str | None]]:
    """(chosen shown as A, pick) per case of a run's prediction rows, on the one order the authors' seed-42
    placement draws (`orders`: case id -> `AB`/`BA`, the layout's `meta.authors_order`); the input of
    `authors_pairwise_summary` (judges/verdict_rules.py). A verdict that is not a valid pick is None (it counts as
    `A` there); a failed call is left out."""
    out = []
    for row in rows:
        order = orders.get(str(row["case_id"]))
        if order is None or row["order"] != order or row.get("status") == "failed":
            continue  # a call that failed is no verdict (the authors' script has no such row)
        choice = row.get("choice")
        out.append((order == "AB", choice if choice in ("A", "B") else None))
    return out


def authors_order_accuracy(rows: Iterable[Mapping[str, object]], orders: Mapping[str, str]) -> float | None:
    """Accuracy on the one order per case that the authors' seeded placement draws (`orders`: case id -> `AB`
    or `BA`, the layout's `meta.authors_order`), from a run's prediction rows (both orders judged)."""
    kept = [bool(r["correct"]) for r in rows if orders.get(str(r["case_id"])) == r["order"]]
    return sum(kept) / len(kept) if kept else None


def chosen_rejected_scores(rows: Iterable[Mapping[str, object]]) -> list[tuple[float, float]]:
    """(chosen score, rejected score) per case from a run's prediction rows whose judge scores each answer
    (`rm:`, `embedding`: `scores` {"A", "B"}): the first row of each case, read by its order (`AB`: chosen is A)."""
    seen: set[str] = set()
    out = []
    for row in rows:
        scores, case = row.get("scores"), str(row["case_id"])
        if case in seen or not isinstance(scores, Mapping) or "A" not in scores or "B" not in scores:
            continue
        seen.add(case)
        a, b = float(scores["A"]), float(scores["B"])
        out.append((a, b) if row["order"] == "AB" else (b, a))
    return out


def pointwise_summary(pairs: Iterable[tuple[float, float]]) -> dict[str, float | int]:
    """evaluation/pointwise.py `compare_scores`: per pair (chosen score, rejected score), the chosen win rate
    (a percentage, as printed there), wins, ties, mean scores and the mean gap (chosen - rejected)."""
    scored = list(pairs)
    total = len(scored)
    wins = sum(c > r for c, r in scored)
    losses = sum(r > c for c, r in scored)
    return {"comparisons": total, "chosen_wins": wins, "rejected_wins": losses, "ties": total - wins - losses,
            "chosen_win_rate": wins / total * 100 if total else 0.0,
            "avg_chosen": sum(c for c, _ in scored) / total if total else 0.0,
            "avg_rejected": sum(r for _, r in scored) / total if total else 0.0,
            "avg_diff": sum(c - r for c, r in scored) / total if total else 0.0}

