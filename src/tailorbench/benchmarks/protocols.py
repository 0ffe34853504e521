"""Protocols of the multiple-choice benchmarks: a named, recorded choice of how items are asked and scored.

`default` is tailorbench's (512-token answers at temperature 0, messages as the layout builds them); `authors`
asks as the benchmark's published scripts do, so its accuracy is the quantity of the authors' tables. Either way
the scorer reads the reply as the model wrote it (`<think>` blocks included); where stripping a reasoning block
would change the outcome, the run reports that reading beside it (`think_stripped`).

Each protocol says in one line what it is and how it differs from the authors' (`differs`); the manifest keeps
the protocol's record (`record`), and every report prints it. PersonaMem's upstream scorer exists in two
incompatible versions (`inference_standalone_openai.py` `Evaluation.extract_answer` of
github.com/bowen-upenn/PersonaMem at commits 041d82a and 214bc36): a run names the one it follows
(`scorer_version`, 041d82a by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.models.base import GenParams
from tailorbench.registry import did_you_mean
from tailorbench.schema import Message

NAMES = ("default", "authors")
#: PersonaMem's upstream scorer versions: short commit -> the name of its scorer in `scoring.SCORERS`
PERSONAMEM_SCORERS = {"041d82a": "personamem", "214bc36": "personamem-214bc36"}
PERSONAMEM_DEFAULT = "041d82a"


@dataclass(frozen=True)
class ChoiceProtocol:
    """How one benchmark's items are asked and scored under one protocol."""

    name: str
    benchmark: str
    #: the answer's token cap (None: none sent) and the warm-up turn's (PrefEval's preference acknowledgement)
    max_tokens: int | None
    warmup_max_tokens: int | None
    #: None: no temperature sent (the provider's default)
    temperature: float | None
    #: PersonaMem's `convert_role_system_to_user`, applied upstream when the model name contains an "o"
    fold_system_if_o: bool
    #: how this protocol differs from the authors' (empty: it is theirs, up to what `unverified` says)
    differs: tuple[str, ...]
    #: details of the authors' protocol this one could not check against their code
    unverified: tuple[str, ...] = ()
    #: what a reader of the authors' code should know about this protocol (a choice among their branches)
    notes: tuple[str, ...] = ()

    def params(self) -> GenParams:
        return GenParams(temperature=self.temperature, max_tokens=self.max_tokens)

    def warmup_params(self) -> GenParams:
        return GenParams(temperature=self.temperature, max_tokens=self.warmup_max_tokens)

    def messages(self, messages: list[Message], model: str) -> list[Message]:
        """The messages as sent: upstream PersonaMem folds system messages into the next one for model names
        with an "o" in them (the name only, not the backend prefix or the URL)."""
        if not (self.fold_system_if_o and "o" in model_name(model)):
            return messages
        return fold_system(messages)


def model_name(spec: str) -> str:
    """The model's own name in a model spec: `openai:gpt-4o@http://host/v1` -> `gpt-4o`."""
    name = spec.split("@", 1)[0]
    return name.split(":", 1)[1] if ":" in name else name


def fold_system(messages: list[Message]) -> list[Message]:
    """PersonaMem's `convert_role_system_to_user`: each system message becomes a `[System]: ...` prefix of the
    next message, and consecutive messages of one role are merged with a newline."""
    out: list[Message] = []
    buffer = ""
    for message in messages:
        role, content = message["role"], message.get("content", "")
        if role == "system":
            buffer += f"[System]: {content}\n"
            continue
        if buffer:
            content, buffer = buffer + content, ""
        if out and out[-1]["role"] == role:
            out[-1] = {"role": role, "content": out[-1]["content"] + "\n" + content}
        else:
            out.append({"role": role, "content": content})
    return out


_DEFAULT_DIFFERS = {
    "prefeval": ("the preference acknowledgement and the answer get 512 tokens each (the authors: 5, config.yaml "
                 "max_mcq_tokens)",
                 "temperature 0"),
    "personamem": ("system messages are kept as they are (upstream folds them into the next message when the "
                   "model name contains an \"o\")",
                   "temperature 0 and 512 tokens (upstream sends neither)"),
}

_PROTOCOLS: dict[tuple[str, str], ChoiceProtocol] = {
    ("prefeval", "default"): ChoiceProtocol("default", "prefeval", 512, 512, 0.0, False, _DEFAULT_DIFFERS["prefeval"]),
    ("prefeval", "authors"): ChoiceProtocol(
        "authors", "prefeval", 5, 5, 0.0, False, (), (),
        ("config.yaml's max_mcq_tokens (5) at temperature 0, as the scripts' Bedrock branches (claude, mistral, "
         "llama: utils/common_utils.py generate_message at 5079505) send them; their gpt branch, whose chat "
         "messages these are, sends neither (both commented out there), and benchmark_classification.py reads a "
         "choice only for claude, mistral (after a <choice> prefill) and llama models: the reading here is the "
         "llama branch's, extract_choice on the reply as written",)),
    ("personamem", "default"): ChoiceProtocol("default", "personamem", 512, 512, 0.0, False,
                                              _DEFAULT_DIFFERS["personamem"]),
    ("personamem", "authors"): ChoiceProtocol("authors", "personamem", None, None, None, True, ()),
}


def choice_protocol(benchmark: str, name: str) -> ChoiceProtocol:
    """The protocol `name` of a multiple-choice benchmark (its layout name); a ConfigError lists the names."""
    if name not in NAMES:
        raise ConfigError(f"option --protocol must be one of {', '.join(NAMES)}, got {name!r}"
                          f"{did_you_mean(name, NAMES)}")
    found = _PROTOCOLS.get((benchmark, name))
    if found is None:
        if name == "default":
            return ChoiceProtocol("default", benchmark, 512, 512, 0.0, False, ())
        raise ConfigError(f"--protocol {name}: no authors' protocol is defined for the {benchmark} benchmark")
    return found


def scorer_for(benchmark: str, scorer: str, version: str | None) -> str:
    """The scorer an item is read with: PersonaMem's by `version` (041d82a by default), others unchanged."""
    if version is None:
        return scorer
    if benchmark != "personamem":
        raise ConfigError(f"--scorer-version applies to PersonaMem only, not to {benchmark}")
    if version not in PERSONAMEM_SCORERS:
        raise ConfigError(f"option --scorer-version must be one of {', '.join(PERSONAMEM_SCORERS)}, got {version!r}"
                          f"{did_you_mean(version, PERSONAMEM_SCORERS)}")
    return PERSONAMEM_SCORERS[version]


def record(protocol: ChoiceProtocol, scorer_version: str | None) -> dict[str, Any]:
    """What the manifest and every report say about the protocol of a run."""
    out: dict[str, Any] = {
        "name": protocol.name, "benchmark": protocol.benchmark,
        "max_tokens": protocol.max_tokens, "warmup_max_tokens": protocol.warmup_max_tokens,
        "temperature": protocol.temperature, "fold_system_if_o": protocol.fold_system_if_o,
        "scoring": "the raw reply (reasoning blocks included); the think-stripped reading reported beside it",
        "differs_from_authors": list(protocol.differs), "unverified": list(protocol.unverified),
        "notes": list(protocol.notes),
    }
    if protocol.benchmark == "personamem":
        out["scorer_version"] = scorer_version or PERSONAMEM_DEFAULT
    return out


def describe(rec: dict[str, Any]) -> str:
    """One sentence for a report: which protocol made the run and how it differs from the authors'."""
    name = rec.get("name", "default")
    head = ("the authors' protocol" if name == "authors" else "tailorbench's default protocol")
    version = f", PersonaMem scorer of commit {rec['scorer_version']}" if rec.get("scorer_version") else ""
    differs = rec.get("differs_from_authors") or []
    tail = ("; it differs from the authors' in: " + "; ".join(differs)) if differs else \
        "; it asks and scores as the authors' scripts do"
    unverified = rec.get("unverified") or []
    note = (" (not checked: " + "; ".join(unverified) + ")") if unverified else ""
    notes = rec.get("notes") or []
    told = (" Note: " + "; ".join(notes) + ".") if notes else ""
    return f"Protocol: {head}{version}{tail}{note}.{told}"
