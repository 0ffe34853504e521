"""Evaluation settings: what context a judge gets besides the question and the two answers.

`persona` renders the explicit profile (optionally only some sections: the field ablation), `none` gives
nothing, `rag` gives the top-k memory items (or persona facts) retrieved for the question. Add a setting with
`@register_setting` (a per-case function) or `@register_setting_factory` (built once per run from all cases,
for settings that need an index); modules named in `_LAZY_SETTINGS` are imported on first use, so the CLI
stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailorbench.errors import ConfigError
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
_SETTINGS: dict[str, ContextBuilder] = {}
_FACTORIES: dict[str, SettingFactory] = {}
#: settings registered by modules imported on first use (their imports are heavy)
_LAZY_SETTINGS: dict[str, str] = {"rag": "tailorbench.memory.rag_setting"}


def register_setting(name: str) -> Callable[[ContextBuilder], ContextBuilder]:
    def wrap(builder: ContextBuilder) -> ContextBuilder:
        _SETTINGS[name] = builder
        return builder

    return wrap


def register_setting_factory(name: str) -> Callable[[SettingFactory], SettingFactory]:
    def wrap(factory: SettingFactory) -> SettingFactory:
        _FACTORIES[name] = factory
        return factory

    return wrap


def _load(name: str) -> None:
    if name not in _SETTINGS and name not in _FACTORIES and name in _LAZY_SETTINGS:
        import importlib

        importlib.import_module(_LAZY_SETTINGS[name])


def get_setting(name: str) -> ContextBuilder:
    """The per-case builder of a setting. For a factory setting this builds its state per call: use
    `prepare_setting` when all cases are known (the runner does)."""
    _load(name)
    if name in _SETTINGS:
        return _SETTINGS[name]
    if name in _FACTORIES:
        factory = _FACTORIES[name]
        return lambda case, options: factory([case], options)(case, options)
    raise ConfigError(f"unknown setting {name!r}; known: {', '.join(known_settings())}")


def prepare_setting(name: str, cases: Sequence[PairCase], options: SettingOptions) -> ContextBuilder:
    """The builder for one run over `cases`: factory settings build their index here, once."""
    _load(name)
    if name in _FACTORIES:
        return _FACTORIES[name](cases, options)
    return get_setting(name)


def known_settings() -> list[str]:
    return sorted({*_SETTINGS, *_FACTORIES, *_LAZY_SETTINGS})


@register_setting("persona")
def _persona(case: PairCase, options: SettingOptions) -> str | None:
    return render_persona(case.persona, options.persona_sections)


@register_setting("none")
def _none(case: PairCase, options: SettingOptions) -> str | None:
    return None
