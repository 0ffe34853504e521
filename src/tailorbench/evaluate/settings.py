"""Evaluation settings: what context a judge gets besides the question and the two answers.

`persona` renders the explicit profile (optionally only some sections: the field ablation), `none` gives
nothing, `rag` gives the top-k memory items (or persona facts) retrieved for the question. Add a setting with
`@register_setting` (a per-case function) or `@register_setting_factory` (built once per run from all cases,
for settings that need an index). Settings live in the `SETTINGS` registry (tailorbench/registry.py): built-in
modules are imported on first use, so the CLI stays light, and a plugin adds one by entry point in the group
`tailorbench.settings` (naming a per-case function, or a module that registers with the decorators).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailorbench import registry
from tailorbench.personas import render_persona
from tailorbench.schema import PairCase


@dataclass
class SettingOptions:
    persona_sections: Sequence[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: (case, options) -> context text for the judge, or None
ContextBuilder = Callable[[PairCase, SettingOptions], "str | None"]
#: (all cases of the run, options) -> ContextBuilder: for settings that build something once per run (an index)
SettingFactory = Callable[[Sequence[PairCase], SettingOptions], ContextBuilder]


@dataclass(frozen=True)
class SettingPart:
    """A registered setting: a per-case builder, or a factory built once per run."""

    builder: ContextBuilder | None = None
    factory: SettingFactory | None = None


#: declared at the ground (registry.SETTINGS) so that run readers of every layer know the names
SETTINGS = registry.SETTINGS


def register_setting(name: str) -> Callable[[ContextBuilder], ContextBuilder]:
    def wrap(builder: ContextBuilder) -> ContextBuilder:
        SETTINGS.add(name, SettingPart(builder=builder))
        return builder

    return wrap


def register_setting_factory(name: str) -> Callable[[SettingFactory], SettingFactory]:
    def wrap(factory: SettingFactory) -> SettingFactory:
        SETTINGS.add(name, SettingPart(factory=factory))
        return factory

    return wrap


def _part(name: str) -> SettingPart:
    """The registered part; a plugin's entry point may name a bare per-case function."""
    part = SETTINGS.get(name)
    return part if isinstance(part, SettingPart) else SettingPart(builder=part)


def get_setting(name: str) -> ContextBuilder:
    """The per-case builder of a setting. For a factory setting this builds its state per call: use
    `prepare_setting` when all cases are known (the runner does)."""
    part = _part(name)
    if part.builder is not None:
        return part.builder
    factory = part.factory
    assert factory is not None
    return lambda case, options: factory([case], options)(case, options)


def prepare_setting(name: str, cases: Sequence[PairCase], options: SettingOptions) -> ContextBuilder:
    """The builder for one run over `cases`: factory settings build their index here, once."""
    part = _part(name)
    if part.factory is not None:
        return part.factory(cases, options)
    return get_setting(name)


def known_settings() -> list[str]:
    return SETTINGS.names()


@register_setting("persona")
def _persona(case: PairCase, options: SettingOptions) -> str | None:
    return render_persona(case.persona, options.persona_sections)


@register_setting("none")
def _none(case: PairCase, options: SettingOptions) -> str | None:
    return None
