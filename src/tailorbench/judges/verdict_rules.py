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
