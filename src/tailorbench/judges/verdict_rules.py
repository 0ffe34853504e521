"""Ways a pairwise judge's reply is read, by name (the `llm:` judge's option `parser`):

- `tailorbench` (the default): `llm.parse_verdict`, strict then an unambiguous fallback;
- `result`: Personalized RewardBench's rule (`evaluate_pairwise` of evaluation/pairwise.py in
  github.com/Martin-qyma/Personalized-RewardBench, commit d8a0cdaa): the reply after its last `</think>`, quotes
  and asterisks removed; the first letter after the first `result:` (any case) picks A or B. Where that finds
  nothing the authors count the pick as `A` (and as a failed parse); here it is `invalid`, and the authors' count
  is made from the run's verdicts (`benchmarks.scoring.authors_pairwise_summary`).

And their prompt files: a system prompt and a user template filled with plain replacements of `{question}`,
`{Response_A}` and `{Response_B}` (`prepare_pairwise_prompts`), the question alone, no persona.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tailorbench.errors import ConfigError
from tailorbench.files import load_bytes
from tailorbench.schema import Choice, Message

PARSERS = ("tailorbench", "result")


def parse_result(output: str) -> Choice | None:
    """The `Result: A/B` rule of evaluate_pairwise; None where it parses nothing."""
    text = output.strip().split("</think>")[-1].strip().replace('"', "").replace("*", "").strip()
    if "result:" in text.lower():
        section = text.lower().split("result:")[1].strip()
        if section.startswith("a"):
            return "A"
        if section.startswith("b"):
            return "B"
    return None


def read_prompt_file(path: str | Path, option: str) -> str:
    """A prompt file's text, stripped as `load_template` strips it; a missing or unreadable one is a ConfigError
    naming the option."""
    path = Path(str(path)).expanduser()
    if not path.is_file():
        raise ConfigError(f"judge option {option}: no such file {path}")
    try:
        return load_bytes(path, "a prompt file").decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise ConfigError(f"judge option {option}: {path} is not UTF-8 text ({exc})") from None


def filled_messages(system: str, user: str, question: str, answer_a: str, answer_b: str) -> list[Message]:
    """`prepare_pairwise_prompts`' user prompt (plain replacements, in its order) after the system prompt."""
    prompt = user.replace("{question}", question).replace("{Response_A}", answer_a).replace("{Response_B}", answer_b)
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


def authors_pairwise_summary(verdicts: Iterable[tuple[bool, str | None]]) -> dict[str, float | int]:
    """evaluation/pairwise.py `calculate_accuracy` and its printed summary (Martin-qyma/Personalized-RewardBench,
    commit d8a0cdaa), from (chosen shown as A, the parsed pick or None) per case in the authors' one order: a pick
    that did not parse counts as `A` (and is counted in `failed_parses`); the accuracy when the chosen answer is A
    and when it is B, `position_bias` = |their difference|, the prediction distribution. Shares, not percentages."""
    rows = [(pos_in_a, pick if pick in ("A", "B") else "A", pick not in ("A", "B")) for pos_in_a, pick in verdicts]
    total = len(rows)

    def acc(subset: list[tuple[bool, str, bool]]) -> float:
        return sum((pick == "A") == pos_in_a for pos_in_a, pick, _ in subset) / len(subset) if subset else 0.0

    in_a = [r for r in rows if r[0]]
    in_b = [r for r in rows if not r[0]]
    correct = sum((pick == "A") == pos_in_a for pos_in_a, pick, _ in rows)
    return {"total": total, "correct": correct, "accuracy": correct / total if total else 0.0,
            "pos_in_a_count": len(in_a), "pos_in_a_accuracy": acc(in_a),
            "pos_in_b_count": len(in_b), "pos_in_b_accuracy": acc(in_b),
            "position_bias": abs(acc(in_a) - acc(in_b)),
            "pred_a_count": sum(pick == "A" for _, pick, _ in rows),
            "pred_b_count": sum(pick == "B" for _, pick, _ in rows),
            "failed_parses": sum(failed for _, _, failed in rows)}
