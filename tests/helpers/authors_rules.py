"""The benchmark authors' scoring rules, re-implemented from their published scripts (cited per function) for the
tests and for perf/benchmarks_dev_check.py to compare tailorbench's scorers with, item by item."""

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


def authors_extract_214bc36(predicted_answer: str, correct_answer: str) -> tuple[bool, str]:
    """PersonaMem's `Evaluation.extract_answer` at commit 214bc36cde68bfbcb9b79c22be7a0d9d9df15fc4 of the same file
    (inference_standalone_openai.py), as published: every letter after the last `<final_answer>` counts."""
    predicted_answer = predicted_answer.strip()
    if "<final_answer>" in predicted_answer:
        predicted_answer = predicted_answer.split("<final_answer>")[-1].strip()
    if predicted_answer.endswith("</final_answer>"):
        predicted_answer = predicted_answer[: -len("</final_answer>")].strip()
    option_pattern = r"\(?([a-zA-Z])\)?"
    predicted_options = re.findall(option_pattern, predicted_answer)
    predicted_options_lower = list(map(str.lower, predicted_options))
    found = re.search(r"\(?([a-zA-Z])\)?", correct_answer)
    assert found is not None
    correct_letter = found.group(1)
    correct_letter_mentioned = correct_letter.lower() in predicted_options_lower
    incorrect_letters = [chr(i) for i in range(65, 91) if chr(i) != correct_letter.upper()]
    incorrect_letters_mentioned = any(letter.lower() in predicted_options_lower for letter in incorrect_letters)
    if correct_letter_mentioned and not incorrect_letters_mentioned:
        return True, predicted_answer
    return False, predicted_answer


def authors_convert_role_system_to_user(messages_4o: list[dict[str, str]]) -> list[dict[str, str]]:
    """PersonaMem's `convert_role_system_to_user` (inference_standalone_openai.py, commits 041d82a and 214bc36),
    applied there when `'o' in model_name`."""
    messages_o1: list[dict[str, str]] = []
    system_buffer = ""
    for msg in messages_4o:
        role = msg.get("role")
        content = msg.get("content", "")
        if role == "system":
            system_buffer += f"[System]: {content}\n"
            continue
        if system_buffer:
            content = system_buffer + content
            system_buffer = ""
        if messages_o1 and messages_o1[-1]["role"] == role:
            messages_o1[-1]["content"] += "\n" + content
        else:
            messages_o1.append({"role": str(role), "content": content})
    return messages_o1


def authors_extract_choice(response: str) -> str | None:
    """PrefEval's `extract_choice` (utils/utils_mcq.py of github.com/amazon-science/PrefEval, commit
    50795054b5ff5f418d2b768a331d71e480f93331): BeautifulSoup's first `<choice>`, its `.string`, the first A-D."""
    import warnings

    from bs4 import BeautifulSoup

    with warnings.catch_warnings():  # bs4's hint that a reply looks like XML is not the authors' output
        warnings.simplefilter("ignore")
        tag = BeautifulSoup(response, "html.parser").find("choice")
    try:
        if tag:
            match = re.search(r"[ABCD]", tag.string)  # type: ignore[arg-type]
            if match:
                return match.group(0)
    except TypeError:
        return None
    return None
