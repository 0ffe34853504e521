"""Benchmark layouts: how a benchmark lies on disk, one registered object each (`LAYOUTS`, entry-point group
`tailorbench.layouts`).

A layout declares its name, what it expects (one line, for the error that lists every layout), how it
recognises a path (`detect`, cheap: a look at names or the first row, never a full read), how it reads cases
(`read` yields `PairCase`s and reports bad rows as `DataError`s through `InvalidRows`, naming file, line and
field), and its split and tier names in report order, with an optional difficulty order for the tiers
(easiest first). PersonaFeedback's names (specific / general; easy / medium / hard) are the default.

Built-in layouts: `hub` and `mirror` (datasets/personafeedback.py), `native` (datasets/native.py), `scored`
(datasets/scored.py). `loader.detect_layout` asks every layout in `priority` order (lower first; the name breaks
ties) and takes the first that recognises the path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.rows import InvalidRows
from tailorbench.errors import ConfigError, DataError
from tailorbench.registry import Registry
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, PairCase

#: PersonaFeedback's other spellings: `spedific` (sic, on the hub) and `mid` (release mirror)
DEFAULT_ALIASES: Mapping[str, str] = {"spedific": "specific", "mid": "medium"}
#: names a split or tier may not take: reports use them for the pooled cells
RESERVED_NAMES = frozenset({"all", ""})


class Layout:
    """One benchmark layout. Subclass it, set the class attributes, implement `detect` and `read` (or `load`,
    for a layout that gathers more than cases: personas, several files), and register it with
    `@register_layout` (or `LAYOUTS.add("name", MyLayout())`; a plugin's entry point may name the class)."""

    #: the name users see in `data_stats.layout` and in error messages
    name: ClassVar[str] = ""
    #: what a path must look like, in one line (the unknown-layout error lists it)
    expects: ClassVar[str] = ""
    #: split and tier names in report order
    splits: ClassVar[tuple[str, ...]] = DEFAULT_SPLITS
    tiers: ClassVar[tuple[str, ...]] = DEFAULT_TIERS
    #: tiers from easiest to hardest, when that differs from `tiers` (None: `tiers` is the difficulty order)
    difficulty: ClassVar[tuple[str, ...] | None] = None
    #: other spellings of a split or tier in this layout's files (lower case -> declared name)
    aliases: ClassVar[Mapping[str, str]] = DEFAULT_ALIASES
    #: detection order: lower asks first (a layout that recognises any JSONL file goes last)
    priority: ClassVar[int] = 50
    #: whose labels the data holds, as reports name it: `human-labelled`, `constructed` (set by the benchmark's
    #: construction, not by people judging the pair) or `not stated`
    labels: ClassVar[str] = "not stated"
    #: what `chosen` is in this layout's data, one sentence (reports define *chosen* by it)
    chosen_is: ClassVar[str] = "the answer the data marks as chosen; the layout does not say who set the labels"

    def detect(self, path: Path) -> bool:
        """Cheap: does `path` look like this layout?"""
        raise NotImplementedError

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        """The cases of `path` in source order; a bad row goes to `invalid.handle(DataError(file, line, field,
        message))`."""
        raise NotImplementedError

    def load(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Benchmark:
        """A `Benchmark` of `read`'s cases (override to record more: personas, several files)."""
        cases = list(self.read(path, invalid, options))
        return self.benchmark(spec, cases, invalid, files=self.files(path))

    def files(self, path: Path) -> list[Path]:
        """The files the dataset fingerprint covers: `path` itself, or every file under a directory."""
        if path.is_file():
            return [path]
        return sorted(p for p in path.rglob("*") if p.is_file())

    # -- helpers for readers ---------------------------------------------------------------------------

    def benchmark(self, spec: str, cases: list[PairCase], invalid: InvalidRows, **extra: Any) -> Benchmark:
        """A Benchmark carrying this layout's name and declared names."""
        return Benchmark(spec, self.name, cases, invalid, splits=tuple(self.splits), tiers=tuple(self.tiers),
                         difficulty=tuple(self.difficulty) if self.difficulty is not None else None, **extra)

    def split_name(self, name: str) -> str | None:
        """The declared split `name` stands for (case-insensitive, aliases accepted), or None."""
        return declared_name(name, self.splits, self.aliases)

    def tier_name(self, name: str) -> str | None:
        """The declared tier `name` stands for (case-insensitive, aliases accepted), or None."""
        return declared_name(name, self.tiers, self.aliases)

    def check_names(self, case: PairCase, path: Path, line: int | None) -> None:
        """A DataError naming the field when the case's split or tier is not one this layout declares."""
        for field, value, declared in (("split", case.split, self.splits), ("tier", case.tier, self.tiers)):
            if value not in declared:
                raise DataError(path, line, field, f"unknown {field} {value!r} for the {self.name} layout "
                                                   f"(declared: {', '.join(declared)})")

    def describe(self) -> str:
        return f"{self.name} ({self.expects})" if self.expects else self.name


def declared_name(name: str, declared: tuple[str, ...], aliases: Mapping[str, str]) -> str | None:
    """`name` as one of `declared` (case-insensitive; `aliases` maps other spellings), or None."""
    key = name.strip().lower()
    for value in declared:
        if value.lower() == key:
            return value
    alias = aliases.get(key)
    return alias if alias in declared else None


def check_declaration(layout: Layout) -> Layout:
    """Refuse a layout without a name or with an empty, repeated or reserved split / tier name."""
    if not layout.name:
        raise ConfigError(f"the layout {type(layout).__name__} declares no name")
    for kind, names in (("splits", layout.splits), ("tiers", layout.tiers)):
        if not names or len(set(names)) != len(names) or any(n.strip().lower() in RESERVED_NAMES for n in names):
            raise ConfigError(f"layout {layout.name!r}: {kind} must be distinct non-empty names other than "
                              f"'all' (got {list(names)})")
    if layout.difficulty is not None and sorted(layout.difficulty) != sorted(layout.tiers):
        raise ConfigError(f"layout {layout.name!r}: the difficulty order {list(layout.difficulty)} must list "
                          f"exactly its tiers {list(layout.tiers)}")
    return layout


LAYOUTS: Registry[Layout] = Registry(
    "benchmark layout",
    "tailorbench.layouts",
    lazy={
        "hub": "tailorbench.datasets.personafeedback",
        "mirror": "tailorbench.datasets.personafeedback",
        "native": "tailorbench.datasets.native",
        "scored": "tailorbench.datasets.scored",
        "prefeval": "tailorbench.datasets.prefeval",
        "personamem": "tailorbench.datasets.personamem",
        "personalized-rewardbench": "tailorbench.datasets.rewardbench",
        "prism": "tailorbench.datasets.prism",
    },
)


L = TypeVar("L", bound=type[Layout])


def register_layout(cls: L) -> L:
    """Class decorator: register one instance of `cls` under `cls.name` (its declaration checked first)."""
    LAYOUTS.add(cls.name, check_declaration(cls()))
    return cls


def _instance(part: object) -> Layout:
    """A registered layout object (an entry point may name the class itself)."""
    layout = part() if isinstance(part, type) else part
    if not isinstance(layout, Layout):
        raise ConfigError(f"{part!r} is not a benchmark layout (subclass tailorbench.datasets.layouts.Layout)")
    return check_declaration(layout)


def get_layout(name: str) -> Layout:
    """The layout called `name` (ConfigError listing every layout when unknown)."""
    return _instance(LAYOUTS.get(name))


def all_layouts() -> list[Layout]:
    """Every layout (built-in and plugin), in detection order."""
    layouts = [_instance(part) for _, part in LAYOUTS.load_all()]
    return sorted({id(x): x for x in layouts}.values(), key=lambda x: (x.priority, x.name))


def known_layouts() -> str:
    """`name (what it expects); ...` for every layout: the tail of every unknown-layout error."""
    return "; ".join(layout.describe() for layout in all_layouts())
