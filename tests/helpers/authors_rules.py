"""The benchmark authors' scoring rules, re-implemented from their published scripts (cited per function) for the
tests and for bench/benchmarks_dev_check.py to compare tailorbench's scorers with, item by item."""

from __future__ import annotations

import re


def authors_extract(predicted_answer: str, correct_answer: str) -> tuple[bool, str]:
    """PersonaMem's `Evaluation.extract_answer` (inference_standalone_openai.py of github.com/bowen-upenn/PersonaMem,
    commit 041d82ac6170d3e62c8f105d16df357dced48d73), as published."""

    def _extract_only_options(text: str) -> set[str]:
        text = text.lower()
        in_parens = re.findall(r"\(([a-d])\)", text)
        if in_parens:
            return set(in_parens)
        return set(re.findall(r"\b([a-d])\b", text))

    correct = correct_answer.lower().strip("() ")
    full_response = predicted_answer
    predicted_answer = predicted_answer.strip()
    if "<final_answer>" in predicted_answer:
        predicted_answer = predicted_answer.split("<final_answer>")[-1].strip()
    if predicted_answer.endswith("</final_answer>"):
        predicted_answer = predicted_answer[: -len("</final_answer>")].strip()
    pred_options = _extract_only_options(predicted_answer)
    if pred_options == {correct}:
        return True, predicted_answer
    response_options = _extract_only_options(full_response)
    if response_options == {correct}:
        return True, predicted_answer
    return False, predicted_answer
