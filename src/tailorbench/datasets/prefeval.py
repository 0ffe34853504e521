"""PrefEval (github.com/amazon-science/PrefEval; CC BY-NC 4.0), read from its own `benchmark_dataset/` folder:
`explicit_preference/<topic>.json`, `implicit_preference/{choice-based,persona-driven}/<topic>.json`,
`mcq_options/<topic>.json` (the same index is the same preference in all four) and `filtered_inter_turns.json`
(the unrelated conversations put between the preference and the question).

Splits: the preference's form, `explicit`, `implicit-choice`, `implicit-persona`. Tiers: the filler turns,
`turns-N` for each N of the option `turns` (`0` by default; `turns=0,10,300`). Every item is built as the
benchmark's scripts build the OpenAI-style (`gpt`) messages:
- multiple choice (`classification_task/benchmark_classification.py`, `utils/utils_mcq.py`): the options of
  `mcq_options` (the first is right) shuffled by `random.seed(41)` then one `random.sample` per item in topic
  order; explicit: the preference as a user turn the model answers first, implicit: the preference conversation;
  then the first 2N filler messages; then the question (+ the reminder with `reminder=true`) and the
  instruction listing the options.
- generation (`generation_task/benchmark_generation.py`): the same context, then the question (+ reminder) and
  the 300-word limit; `read_generation_items`.
Options: `turns`, `forms` (`explicit,choice,persona`), `topics`, `seed` (41), `reminder` (false).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tailorbench.datasets.choice import LETTERS, ChoiceItem, ChoiceLayout, ItemSet, render_messages, unknown_options
from tailorbench.datasets.layouts import register_layout
from tailorbench.datasets.prefeval_prompts import MAX_GEN_TOKENS, MCQ_FORMAT, REMINDER, SYSTEM_PROMPT, WORD_LIMIT
from tailorbench.datasets.rows import InvalidRows, remember_digest
from tailorbench.errors import ConfigError, DataError
from tailorbench.files import load_bytes, parse_json

#: split name -> (option value, the folder of its preference conversations; None for explicit)
FORMS: dict[str, tuple[str, str | None]] = {
    "explicit": ("explicit", None),
    "implicit-choice": ("choice", "implicit_preference/choice-based"),
    "implicit-persona": ("persona", "implicit_preference/persona-driven"),
}
OPTIONS = ("turns", "forms", "topics", "seed", "reminder")
DEFAULT_SEED = 41
FILLER = "filtered_inter_turns.json"


@dataclass(frozen=True)
class Settings:
    turns: tuple[int, ...]
    forms: tuple[str, ...]
    topics: tuple[str, ...] | None
    seed: int
    reminder: bool


@dataclass(frozen=True)
class GenerationItem:
    """One generation-task prompt: what the model sees, and what the four checks are asked about."""

    id: str
    split: str
    tier: str
    user_id: str
    warmup: str | None
    context: list[dict[str, str]]
    prompt: str
    preference: str
    question: str
    system: str = SYSTEM_PROMPT


def dataset_root(path: Path) -> Path | None:
    """The `benchmark_dataset` folder at or under `path`, or None."""
    for root in (path, path / "benchmark_dataset"):
        if (root / "mcq_options").is_dir() and (root / "explicit_preference").is_dir():
            return root
    return None


def settings(options: Mapping[str, Any]) -> Settings:
    """The layout's options, checked (a ConfigError names the bad one)."""
    unknown_options("prefeval", options, OPTIONS)
    turns = tuple(_ints(options.get("turns", "0"), "turns"))
    by_option = {value: split for split, (value, _) in FORMS.items()}
    forms = []
    for name in _names(options.get("forms", "explicit,choice,persona")):
        if name not in by_option:
            raise ConfigError(f"option forms: unknown form {name!r} (known: explicit, choice, persona)")
        forms.append(by_option[name])
    topics = tuple(_names(options["topics"])) if options.get("topics") else None
    seed = _ints(options.get("seed", DEFAULT_SEED), "seed")
    reminder = str(options.get("reminder", "false")).strip().lower()
    if reminder not in ("true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"option reminder must be true or false, got {options.get('reminder')!r}")
    if not turns or not forms or len(seed) != 1:
        raise ConfigError("options turns and forms need at least one value, seed exactly one")
    return Settings(turns, tuple(forms), topics, seed[0], reminder in ("true", "1", "yes"))


def _names(value: Any) -> list[str]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(x).strip() for x in items if str(x).strip()]


def _ints(value: Any, option: str) -> list[int]:
    out = []
    for text in _names(value) if not isinstance(value, int) else [str(value)]:
        try:
            number = int(text)
        except ValueError:
            raise ConfigError(f"option {option} must be whole numbers >= 0, got {text!r}") from None
        if number < 0:
            raise ConfigError(f"option {option} must be whole numbers >= 0, got {number}")
        out.append(number)
    return out


def read_json(path: Path) -> Any:
    """A JSON file's content (its sha256 remembered for the fingerprint), read by the one reader (bounded in size
    and nesting); a bad file is a DataError naming its line."""
    data = load_bytes(path, "a PrefEval JSON file")
    remember_digest(path, data)
    return parse_json(data, path)


def _entries(path: Path) -> list[Any]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(path, None, None, f"expected a JSON list of preferences, got {type(data).__name__}")
    return data


def text_field(entry: Any, key: str, path: Path, index: int) -> str:
    """A required non-empty string of entry `index` of a JSON list (the error names `[index].key`)."""
    where = f"[{index}].{key}"
    if not isinstance(entry, dict):
        raise DataError(path, None, f"[{index}]", f"expected an object, got {type(entry).__name__}")
    if entry.get(key) is None:
        raise DataError(path, None, where, "missing required field")
    value = entry[key]
    if not isinstance(value, str):
        raise DataError(path, None, where, f"expected text, got {type(value).__name__}")
    if not value.strip():
        raise DataError(path, None, where, "must not be empty")
    return value


def filler_messages(root: Path, turns: int) -> list[dict[str, str]]:
    """The first `turns` user/assistant exchanges of the filler conversations, concatenated in file order
    (`extract_multi_turn_conversation`: exactly 2 x turns messages, the last from the assistant)."""
    if turns == 0:
        return []
    path = root / FILLER
    messages: list[dict[str, str]] = []
    for index, entry in enumerate(_entries(path)):
        conversation = entry.get("conversation") if isinstance(entry, dict) else None
        if not isinstance(conversation, list):
            raise DataError(path, None, f"[{index}].conversation", "expected a list of messages")
        for number, message in enumerate(conversation):
            where = f"[{index}].conversation[{number}]"
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant") \
                    or not isinstance(message.get("content"), str):
                raise DataError(path, None, where, "expected {role: user|assistant, content: text}")
            messages.append({"role": message["role"], "content": message["content"]})
            if len(messages) == 2 * turns:
                if message["role"] != "assistant":
                    raise DataError(path, None, where, f"filler turn {turns} must end with the assistant")
                return messages
    raise DataError(path, None, None, f"holds {len(messages) // 2} filler turns, fewer than the {turns} asked for")


def conversation_messages(conversation: Any, split: str, path: Path, index: int) -> list[dict[str, str]]:
    """An implicit preference's conversation as messages (`extract_conversation_to_messages`: choice-based keys
    `query` and `user_selection` are the user's; `extract_conversation_to_msg_persona`: numbered turns)."""
    where = f"[{index}].conversation"
    if not isinstance(conversation, dict) or not conversation:
        raise DataError(path, None, where, "expected a non-empty object")
    out: list[dict[str, str]] = []
    if split == "implicit-choice":
        for key, content in conversation.items():
            if not isinstance(content, str):
                raise DataError(path, None, f"{where}.{key}", "expected text")
            out.append({"role": "user" if key in ("query", "user_selection") else "assistant", "content": content})
        return out
    for key, turn in conversation.items():
        if not isinstance(turn, dict) or not all(isinstance(turn.get(r), str) for r in ("user", "assistant")):
            raise DataError(path, None, f"{where}.{key}", "expected {user: text, assistant: text}")
        out += [{"role": "user", "content": turn["user"]}, {"role": "assistant", "content": turn["assistant"]}]
    return out


def format_options(options: Sequence[str]) -> str:
    """`format_options`: `A. text` lines."""
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))


def shuffled(options: list[str], rng: random.Random) -> tuple[list[str], str]:
    """`shuffle_options`: a `random.sample` of the options and the letter the first (right) one lands on."""
    new = rng.sample(options, len(options))
    return new, LETTERS[new.index(options[0])]


def topics(root: Path, wanted: tuple[str, ...] | None) -> list[str]:
    found = sorted(p.stem for p in (root / "mcq_options").glob("*.json"))
    if wanted is None:
        return found
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise ConfigError(f"option topics: no such topic {', '.join(missing)} in {root / 'mcq_options'} "
                          f"(found: {', '.join(found)})")
    return [t for t in found if t in wanted]


def _context(split: str, root: Path, topic: str, index: int,
             preferences: dict[str, list[Any]]) -> tuple[str | None, list[dict[str, str]], dict[str, Any]]:
    """(warmup, messages, persona) of one preference in one form."""
    folder = FORMS[split][1]
    if folder is None:
        return None, [], {}
    path = root / folder / f"{topic}.json"
    entries = preferences.setdefault(str(path), _entries(path))
    if index >= len(entries):
        raise DataError(path, None, f"[{index}]", f"missing: {root / 'mcq_options' / topic}.json has an entry "
                                                  f"{index} and this file only {len(entries)}")
    entry = entries[index]
    if not isinstance(entry, dict):
        raise DataError(path, None, f"[{index}]", "expected an object")
    messages = conversation_messages(entry.get("conversation"), split, path, index)
    return None, messages, {"Conversation": render_messages(messages)}


def read_choice_items(root: Path, invalid: InvalidRows, chosen: Settings) -> Iterator[ChoiceItem]:
    """The multiple-choice items, form by form, turn count by turn count, topic by topic, in file order."""
    preferences: dict[str, list[Any]] = {}
    fillers = {n: filler_messages(root, n) for n in chosen.turns}
    # the pair view's persona: what was said, then the filler turns (one text per count, shared by its items)
    later = {n: render_messages(m) for n, m in fillers.items()}
    for topic in topics(root, chosen.topics):
        path = root / "mcq_options" / f"{topic}.json"
        entries = _entries(path)
        rng = random.Random(chosen.seed)  # benchmark_classification.py: random.seed(41) once per topic run
        for index, entry in enumerate(entries):
            try:
                preference = text_field(entry, "preference", path, index)
                question = text_field(entry, "question", path, index)
                options = entry.get("classification_task_options")
                if not isinstance(options, list) or len(options) != 4 or not all(
                        isinstance(o, str) and o.strip() for o in options):
                    raise DataError(path, None, f"[{index}].classification_task_options",
                                    "expected a list of 4 non-empty texts (the first the right one)")
            except DataError as error:
                invalid.handle(error)
                continue
            order, answer = shuffled(options, rng)
            asked = question + (REMINDER if chosen.reminder else "")
            prompt = asked + MCQ_FORMAT.replace("{options}", format_options(order))
            for split in chosen.forms:
                try:
                    warmup, messages, persona = _context(split, root, topic, index, preferences)
                except DataError as error:
                    invalid.handle(error)
                    continue
                if split == "explicit":
                    warmup, persona = preference, {"Preference": preference}
                for turns in chosen.turns:
                    yield ChoiceItem(
                        id=f"{split}/{topic}/{index}/turns-{turns}", split=split, tier=f"turns-{turns}",
                        user_id=f"{topic}/{index}", warmup=warmup, context=[*messages, *fillers[turns]],
                        prompt=prompt, options=order, answer=answer, scorer="prefeval-choice",
                        persona={**persona, "Later conversation": later[turns]} if turns else persona,
                        question=question, system=SYSTEM_PROMPT,
                        meta={"topic": topic, "index": index, "turns": turns, "preference": preference,
                              "seed": chosen.seed, "reminder": chosen.reminder},
                    )


def read_generation_items(path: Path, options: Mapping[str, Any] | None = None,
                          invalid: InvalidRows | None = None) -> Iterator[GenerationItem]:
    """The generation-task prompts (explicit: `explicit_preference`, implicit: the conversation files; each
    gives the preference and question the checks are asked about)."""
    root = dataset_root(path)
    if root is None:
        raise DataError(path, None, None, f"not a PrefEval folder ({PrefEvalLayout.expects})")
    chosen, invalid = settings(options or {}), invalid or InvalidRows()
    preferences: dict[str, list[Any]] = {}
    fillers = {n: filler_messages(root, n) for n in chosen.turns}
    for topic in topics(root, chosen.topics):
        for split in chosen.forms:
            folder = FORMS[split][1] or "explicit_preference"
            file = root / folder / f"{topic}.json"
            entries = preferences.setdefault(str(file), _entries(file))
            for index, entry in enumerate(entries):
                try:
                    preference = text_field(entry, "preference", file, index)
                    question = text_field(entry, "question", file, index)
                    warmup, messages, _ = _context(split, root, topic, index, preferences)
                except DataError as error:
                    invalid.handle(error)
                    continue
                prompt = question + (REMINDER if chosen.reminder else "") + WORD_LIMIT.replace(
                    "{max_tokens}", str(MAX_GEN_TOKENS))
                for turns in chosen.turns:
                    yield GenerationItem(
                        id=f"{split}/{topic}/{index}/turns-{turns}", split=split, tier=f"turns-{turns}",
                        user_id=f"{topic}/{index}", warmup=preference if split == "explicit" else warmup,
                        context=[*messages, *fillers[turns]], prompt=prompt, preference=preference,
                        question=question)


#: the generation-task prompts of one PrefEval folder
GenerationSet = ItemSet[GenerationItem]


def load_generation_items(data: str | Path, options: Mapping[str, Any] | None = None,
                          skip_invalid: bool = False) -> GenerationSet:
    """`read_generation_items` of a PrefEval folder, with the names, files and skipped rows a run records."""
    path = Path(str(data)).expanduser()
    invalid = InvalidRows(skip=skip_invalid)
    items = list(read_generation_items(path, options, invalid))
    layout = PrefEvalLayout()
    splits, tiers = layout.item_names(options or {})
    return GenerationSet(str(data), "prefeval-generation", items, splits, tiers, layout.files(path), invalid,
                         {"items": len(items), "card": dict(layout.card)})


@register_layout
class PrefEvalLayout(ChoiceLayout):
    """PrefEval's multiple-choice task; the pair view is the right option against each wrong one."""

    labels: ClassVar[str] = "constructed"
    chosen_is: ClassVar[str] = (
        "the option that respects the user's stated preference, set by PrefEval's construction (options "
        "generated and classified by the authors' pipeline), not a human choice between the options"
    )

    name = "prefeval"
    expects = "PrefEval's benchmark_dataset/ folder (mcq_options/, explicit_preference/, implicit_preference/)"
    splits = tuple(FORMS)
    tiers = ("turns-0",)
    priority = 20
    card: ClassVar[Mapping[str, str]] = {
        "licence": "CC BY-NC 4.0 (non-commercial use)",
        "size": "1,000 preferences over 20 topics, 3 forms, 0-300 filler turns",
        "citation": "Zhao et al., Do LLMs Recognize Your Preferences? Evaluating Personalized Preference "
                    "Following in LLMs, ICLR 2025",
        "source": "github.com/amazon-science/PrefEval (benchmark_dataset/)",
    }

    def detect(self, path: Path) -> bool:
        return path.is_dir() and dataset_root(path) is not None

    def item_names(self, options: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        chosen = settings(options)
        return chosen.forms, tuple(f"turns-{n}" for n in chosen.turns)

    def read_items(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[ChoiceItem]:
        root = dataset_root(path)
        if root is None:
            raise DataError(path, None, None, f"not a PrefEval folder ({self.expects})")
        yield from read_choice_items(root, invalid, settings(options))

    def files(self, path: Path) -> list[Path]:
        root = dataset_root(path) or path
        return sorted(p for p in root.rglob("*.json") if p.is_file())
