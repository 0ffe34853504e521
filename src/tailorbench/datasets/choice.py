"""Multiple-choice benchmarks (PrefEval's classification task, PersonaMem): the `ChoiceItem` record, the
`ChoiceLayout` base its layouts share, and `load_choice_items`, the loader of their items.

A multiple-choice item is not a pair, so it has its own record; but a choice layout is a `Layout` in the one
`LAYOUTS` registry, so detection, `tailor data check`, `tailor eval` and `train-rm` see it like any other: its
`read` yields the *pair view* of each item (the right option chosen, each other option rejected, one case per
wrong option), which every pairwise judge and reward model can score. The benchmark's own metric, the accuracy
of one pick among all options as its authors score it, comes from `tailorbench.benchmarks` (`run_choice`), which
reads the items through `load_choice_items`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.layouts import Layout, all_layouts, get_layout
from tailorbench.datasets.loader import find_layout, source_path
from tailorbench.datasets.rows import InvalidRows, pair_hash
from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import PairCase

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class ChoiceItem(BaseModel):
    """One multiple-choice question as the benchmark asks it: the conversation before it, the user message that
    asks it (`prompt`, built exactly as the benchmark's code builds it, options included), the options in the
    order shown and the right option's letter."""

    model_config = ConfigDict(extra="forbid")

    id: str
    split: str
    tier: str
    user_id: str
    #: the system message (None: none)
    system: str | None = None
    #: a user message the model answers first (PrefEval's explicit preference); its answer joins the context
    warmup: str | None = None
    #: the messages before the question, `{"role", "content"}` each
    context: list[dict[str, str]] = Field(default_factory=list)
    prompt: str
    options: list[str]
    #: the right option's letter (`A` for the first of `options`)
    answer: str
    #: the name of the scorer (`tailorbench.benchmarks.SCORERS`) that reads a response to this item
    scorer: str
    #: what the pair view shows a judge as the persona (the stated preference, the conversation)
    persona: dict[str, Any] = Field(default_factory=dict)
    #: the question alone, without options or instructions (the pair view's question)
    question: str
    meta: dict[str, Any] = Field(default_factory=dict)

    def answer_index(self) -> int:
        return LETTERS.index(self.answer)


T = TypeVar("T")


@dataclass
class ItemSet(Generic[T]):
    """The items of one source (multiple-choice items, PrefEval's generation prompts), the names its layout
    declares for them and what the reader saw: what a run records of its data."""

    source: str
    layout: str
    items: list[T]
    splits: tuple[str, ...]
    tiers: tuple[str, ...]
    files: list[Path]
    invalid: InvalidRows
    stats: dict[str, Any] = field(default_factory=dict)


ChoiceSet = ItemSet[ChoiceItem]


class ChoiceLayout(Layout):
    """A layout of multiple-choice items. Subclasses implement `read_items` (and `item_names` when their tiers
    depend on the options); `read` and `load` give the pair view."""

    #: what the layout's items are: the run kind that scores them as their authors do
    task: ClassVar[str] = "multiple-choice"
    #: the dataset card's facts (licence, size, citation, where to get it): `tailor data check` shows them
    card: ClassVar[Mapping[str, str]] = {}

    def read_items(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[ChoiceItem]:
        raise NotImplementedError

    def item_names(self, options: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The split and tier names of the items read with `options` (the declared ones by default)."""
        return tuple(self.splits), tuple(self.tiers)

    def item_files(self, path: Path, options: Mapping[str, Any]) -> list[Path]:
        """The files the items read with `options` come from (the dataset fingerprint); `files` by default."""
        return self.files(path)

    def load_items(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> ChoiceSet:
        items = list(self.read_items(path, invalid, options))
        splits, tiers = self.item_names(options)
        return ChoiceSet(spec, self.name, items, splits, tiers, self.item_files(path, options), invalid,
                         {"items": len(items), "card": dict(self.card)})

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        for item in self.read_items(path, invalid, options):
            yield from pair_view(item)

    def load(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Benchmark:
        items = self.load_items(spec, path, invalid, options)
        cases = [case for item in items.items for case in pair_view(item)]
        return Benchmark(spec, self.name, cases, invalid, files=items.files, splits=items.splits,
                         tiers=items.tiers, layout_stats={"task": self.task, **items.stats})


def pair_view(item: ChoiceItem) -> Iterator[PairCase]:
    """The item as pairs: the right option chosen over each wrong one (`{id}/vs-{letter}`)."""
    right = item.answer_index()
    for index, option in enumerate(item.options):
        if index == right or option == item.options[right]:
            continue
        chosen = item.options[right]
        yield PairCase(
            id=f"{item.id}/vs-{LETTERS[index]}", split=item.split, tier=item.tier, user_id=item.user_id,
            persona=item.persona, question=item.question, chosen=chosen, rejected=option,
            meta={"item": item.id, "pair_hash": pair_hash(item.user_id, item.question, chosen, option)},
        )


def load_choice_items(data: str | Path, skip_invalid: bool = False, layout: str | None = None,
                      options: Mapping[str, Any] | None = None) -> ChoiceSet:
    """The multiple-choice items of a path or `hf:OWNER/NAME` (its layout detected, or the one named by
    `layout`); a layout that is not multiple-choice is a ConfigError naming the ones that are."""
    path = source_path(str(data))
    if not path.exists():
        raise DataError(path, None, None, "no such file or directory")
    reader = find_layout(path) if layout is None else get_layout(layout)
    if not isinstance(reader, ChoiceLayout):
        names = [x.name for x in all_layouts() if isinstance(x, ChoiceLayout)]
        raise ConfigError(f"{path} is a {reader.name} benchmark, not a multiple-choice one "
                          f"(multiple-choice layouts: {', '.join(names)})")
    return reader.load_items(str(data), path, InvalidRows(skip=skip_invalid), options or {})


def render_messages(messages: Sequence[Mapping[str, str]]) -> str:
    """Messages as `role: content` lines (what the pair view shows a judge as part of the persona)."""
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def unknown_options(layout: str, options: Mapping[str, Any], known: tuple[str, ...]) -> None:
    """A ConfigError naming the options a layout does not take, and the ones it does."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(f"unknown option(s) for the {layout} layout: {', '.join(unknown)} "
                          f"(known: {', '.join(known)})")
