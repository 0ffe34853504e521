"""Evaluation settings: what context a judge gets besides the question and the two answers.

`persona` renders the explicit profile (optionally only some sections: the field ablation), `none` gives
nothing. Add a setting (the RAG setting arrives with the memory/retrieval work) with `@register_setting`.
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
_SETTINGS: dict[str, ContextBuilder] = {}


def register_setting(name: str) -> Callable[[ContextBuilder], ContextBuilder]:
    def wrap(builder: ContextBuilder) -> ContextBuilder:
        _SETTINGS[name] = builder
        return builder

    return wrap


def get_setting(name: str) -> ContextBuilder:
    if name not in _SETTINGS:
        raise ConfigError(f"unknown setting {name!r}; known: {', '.join(sorted(_SETTINGS))}")
    return _SETTINGS[name]


def known_settings() -> list[str]:
    return sorted(_SETTINGS)


@register_setting("persona")
def _persona(case: PairCase, options: SettingOptions) -> str | None:
    return render_persona(case.persona, options.persona_sections)


@register_setting("none")
def _none(case: PairCase, options: SettingOptions) -> str | None:
    return None
