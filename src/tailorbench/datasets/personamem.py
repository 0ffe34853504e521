"""PersonaMem v1 (Hugging Face bowen-upenn/PersonaMem-v1; MIT), read as published: `questions_<size>.csv` and
beside it `shared_contexts_<size>.jsonl` (one object a line, `{"<shared_context_id>": [{"role", "content"}, ...]}`;
the option `contexts` names another file). Each question sees the shared context sliced at
`end_index_in_shared_context` and, as one user message, `question + "\\n\\n" + instruction + "\\n\\n" + all_options`
with `all_options` as the CSV holds it (a Python list literal): what `inference_standalone_openai.py` of
github.com/bowen-upenn/PersonaMem sends (`query_llm`).

Splits: the question types; tiers: the context length of the file (`32k`, `128k`, `1M`, from its name).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from tailorbench.datasets.choice import LETTERS, ChoiceItem, ChoiceLayout, render_messages, unknown_options
from tailorbench.datasets.layouts import register_layout
from tailorbench.datasets.rows import InvalidRows, read_jsonl, remember_digest
from tailorbench.errors import ConfigError, DataError
from tailorbench.files import load_bytes, parse_count, parse_csv

#: `query_llm`'s default instruction
INSTRUCTION = ("Find the most appropriate model response and give your final answer (a), (b), (c), or (d) after "
               "the special token <final_answer>.")
QUESTION_TYPES = (
    "recall_user_shared_facts", "recalling_facts_mentioned_by_the_user", "track_full_preference_evolution",
    "recalling_the_reasons_behind_previous_updates", "provide_preference_aligned_recommendations",
    "suggest_new_ideas", "generalizing_to_new_scenarios",
)
SIZES = ("32k", "128k", "1M")
COLUMNS = ("persona_id", "question_id", "question_type", "topic", "context_length_in_tokens",
           "distance_to_ref_in_blocks", "user_question_or_message", "correct_answer", "all_options",
           "shared_context_id", "end_index_in_shared_context")
_NAME = re.compile(r"^questions_(32k|128k|1M)\.csv$")


def question_files(path: Path) -> list[Path]:
    """`path` itself when it is a `questions_<size>.csv`, else every such file in the folder `path`."""
    if path.is_file():
        return [path] if _NAME.match(path.name) else []
    return sorted(p for p in path.glob("questions_*.csv") if _NAME.match(p.name)) if path.is_dir() else []


def questions_file(path: Path, options: Mapping[str, Any]) -> Path:
    """The questions file to read: the only one, or the one of the option `size` (the published folder holds
    all three); a ConfigError names the sizes present when the choice is not clear."""
    found = question_files(path)
    if not found:
        raise DataError(path, None, None, f"not a PersonaMem file ({PersonaMemLayout.expects})")
    size = options.get("size")
    if size is not None:
        chosen = [p for p in found if p.name == f"questions_{size}.csv"]
        if not chosen:
            raise ConfigError(f"option size: no questions_{size}.csv at {path} (found: "
                              f"{', '.join(p.name for p in found)})")
        return chosen[0]
    if len(found) > 1:
        raise ConfigError(f"{path} holds {', '.join(p.name for p in found)}: choose one with the layout option "
                          f"size ({', '.join(SIZES)})")
    return found[0]


def contexts_file(questions: Path, options: Mapping[str, Any]) -> Path:
    size = questions.name[len("questions_"):-len(".csv")]
    return Path(str(options["contexts"])) if options.get("contexts") else \
        questions.with_name(f"shared_contexts_{size}.jsonl")


def read_contexts(path: Path, invalid: InvalidRows) -> dict[str, list[dict[str, str]]]:
    """Shared contexts by id; every message must be `{"role": text, "content": text}`."""
    out: dict[str, list[dict[str, str]]] = {}
    for line, row in read_jsonl(path, invalid):
        try:
            if len(row) != 1:
                raise DataError(path, line, None, f"expected one {{id: messages}} pair, got {len(row)} keys")
            key, messages = next(iter(row.items()))
            if not isinstance(messages, list):
                raise DataError(path, line, key, "expected a list of messages")
            for number, message in enumerate(messages):
                if not isinstance(message, dict) or not isinstance(message.get("role"), str) \
                        or not isinstance(message.get("content"), str):
                    raise DataError(path, line, f"{key}[{number}]", "expected {role: text, content: text}")
            out[key] = [{"role": m["role"], "content": m["content"]} for m in messages]
        except DataError as error:
            invalid.handle(error)
    return out


def _options(text: str, path: Path, line: int) -> list[str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise DataError(path, line, "all_options", "not a list literal") from None
    if not isinstance(value, list) or not 2 <= len(value) <= len(LETTERS) or not all(
            isinstance(x, str) and x.strip() for x in value):
        raise DataError(path, line, "all_options", "expected a list of non-empty option texts")
    return value


def _int(row: dict[str, str], key: str, path: Path, line: int) -> int:
    """A count or index column: digits only (`int()` would read "1_0" as 10, and -5 would slice the shared
    context from its end)."""
    return parse_count(row[key], path, line, key)


def item(row: dict[str, str], path: Path, line: int, size: str,
         contexts: Mapping[str, list[dict[str, str]]], context_file: Path) -> ChoiceItem:
    """One question row as an item (a DataError names the line and column)."""
    for key in COLUMNS:
        if row.get(key) is None:
            raise DataError(path, line, key, "missing required field")
    if row["question_type"] not in QUESTION_TYPES:
        raise DataError(path, line, "question_type", f"unknown question type {row['question_type']!r} "
                                                     f"(known: {', '.join(QUESTION_TYPES)})")
    options = _options(row["all_options"], path, line)
    letter = row["correct_answer"].strip().strip("() ").upper()
    if len(letter) != 1 or letter not in LETTERS[:len(options)]:
        raise DataError(path, line, "correct_answer", f"expected an option letter such as (a), got "
                                                      f"{row['correct_answer']!r}")
    end = _int(row, "end_index_in_shared_context", path, line)
    shared = contexts.get(row["shared_context_id"])
    if shared is None:
        raise DataError(path, line, "shared_context_id", f"{row['shared_context_id']!r} is not in {context_file}")
    if end > len(shared):
        raise DataError(path, line, "end_index_in_shared_context", f"{end} is past the end of shared context "
                                                                   f"{row['shared_context_id']!r} ({len(shared)} "
                                                                   "messages)")
    question = row["user_question_or_message"]
    if not question.strip():
        raise DataError(path, line, "user_question_or_message", "must not be empty")
    context = shared[:end]
    return ChoiceItem(
        id=f"{row['persona_id']}/{row['question_id']}", split=row["question_type"], tier=size,
        user_id=f"persona:{row['persona_id']}", context=context,
        prompt=question + "\n\n" + INSTRUCTION + "\n\n" + row["all_options"], options=options, answer=letter,
        scorer="personamem", question=question,
        persona={"History": render_messages(context)},
        meta={"topic": row["topic"], "context_length_in_tokens": _int(row, "context_length_in_tokens", path, line),
              "distance_to_ref_in_blocks": _int(row, "distance_to_ref_in_blocks", path, line),
              "shared_context_id": row["shared_context_id"], "end_index_in_shared_context": end},
    )


def read_items(path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[ChoiceItem]:
    unknown_options("personamem", options, ("contexts", "size"))
    questions = questions_file(path, options)
    size = questions.name[len("questions_"):-len(".csv")]
    context_file = contexts_file(questions, options)
    if not context_file.is_file():
        raise DataError(context_file, None, None, f"no such file: the shared contexts of {questions.name} "
                                                  "(give another with the layout option contexts=PATH)")
    contexts = read_contexts(context_file, invalid)
    data = load_bytes(questions, PersonaMemLayout.expects)
    remember_digest(questions, data)
    seen: dict[str, int] = {}
    for line, row in parse_csv(data, questions, COLUMNS, invalid.handle):
        try:
            built = item(row, questions, line, size, contexts, context_file)
            if built.id in seen:
                raise DataError(questions, line, "question_id", f"duplicate question {built.id!r} "
                                                                f"(first at {questions}:{seen[built.id]})")
            seen[built.id] = line
            yield built
        except DataError as error:
            invalid.handle(error)


@register_layout
class PersonaMemLayout(ChoiceLayout):
    """PersonaMem's questions over long, evolving user histories (4 options, chance 0.25)."""

    labels: ClassVar[str] = "constructed"
    chosen_is: ClassVar[str] = (
        "the question's correct option, set by PersonaMem's generation pipeline from the user's simulated "
        "history, not a human choice between the options"
    )

    name = "personamem"
    expects = "PersonaMem's questions_<32k|128k|1M>.csv with shared_contexts_<size>.jsonl beside it (or their folder)"
    splits = QUESTION_TYPES
    tiers = SIZES
    priority = 20
    card: ClassVar[Mapping[str, str]] = dict(
        licence="MIT", size="about 6,000 questions per context length (32k, 128k, 1M tokens), 20 personas",
        citation="Jiang et al., Know Me, Respond to Me: Benchmarking LLMs for Dynamic User Profiling and Personalized "
        "Responses at Scale (PersonaMem), 2025", source="huggingface.co/datasets/bowen-upenn/PersonaMem-v1")

    def detect(self, path: Path) -> bool:
        return bool(question_files(path))

    def read_items(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[ChoiceItem]:
        yield from read_items(path, invalid, options)

    def item_files(self, path: Path, options: Mapping[str, Any]) -> list[Path]:
        questions = questions_file(path, options)
        return [p for p in (questions, contexts_file(questions, options)) if p.exists()]
