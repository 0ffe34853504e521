"""`tailor ls [KIND]`: what is registered at every extension point (registry.py), built-ins and installed plugins,
and the built-in suites."""

from __future__ import annotations

import importlib
from typing import Any

from tailorbench.api.results import Output
from tailorbench.errors import ConfigError

#: KIND (as `tailor ls` takes it) -> (the module that fills the registry, its entry-point group: the registry in
#: `registry.GROUPS`, where users type the names); `suites` are the built-in suite files
KINDS: dict[str, tuple[str, str, str]] = {
    "judges": ("tailorbench.judges.base", "tailorbench.judges", "--judge NAME[:ARG] (eval, gen-eval)"),
    "backends": ("tailorbench.models.backends", "tailorbench.backends", "--model BACKEND:MODEL, llm:BACKEND:MODEL"),
    "layouts": ("tailorbench.datasets.layouts", "tailorbench.layouts",
                "--data PATH (detected), --input-format (annotate import)"),
    "settings": ("tailorbench.evaluate.settings", "tailorbench.settings", "--setting NAME (eval, gen-eval, train-rm)"),
    "task-types": ("tailorbench.annotation.tasks", "tailorbench.task_types", "--task-type NAME (annotate)"),
    "run-kinds": ("tailorbench.run_kinds", "tailorbench.run_kinds", "the run directories report, compare and view "
                  "read"),
    "alignments": ("tailorbench.agreement.alignments", "tailorbench.alignments", "--alignment NAME (agree)"),
    "scorers": ("tailorbench.benchmarks.scoring", "tailorbench.scorers", "the rules that score multiple-choice "
                "benchmarks"),
    "batch-apis": ("tailorbench.models.batch_lines", "tailorbench.batch_apis", "--batch (the backends with a batch "
                   "API)"),
    "reconstructors": ("tailorbench.leakage", "tailorbench.reconstructors", "the training content of a checkpoint, "
                       "for leakage checks"),
    "suites": ("tailorbench.benchmarks.suite", "", "--suite NAME (eval)"),
}


class Part(Output):
    """One registered name and where it comes from: `builtin`, `plugin:DIST` or `registered` (at run time)."""

    name: str
    source: str


class Registered(Output):
    """One kind of part: its names, the entry-point group a plugin adds to, and where users type them."""

    kind: str
    group: str | None
    used_as: str
    parts: list[Part]


def kind_of(kind: str) -> str:
    """The KINDS key a user meant (`judge`, `task_types` and `Task-Types` mean `task-types`); an unknown one is a
    ConfigError with the closest."""
    from tailorbench.registry import did_you_mean

    key = kind.strip().lower().replace("_", "-")
    for name in (key, key + "s"):
        if name in KINDS:
            return name
    raise ConfigError(f"unknown kind {kind!r}{did_you_mean(key, KINDS)}; known: {', '.join(KINDS)}")


def _listing(kind: str) -> Registered:
    from tailorbench.registry import GROUPS

    module_name, group, used_as = KINDS[kind]
    module = importlib.import_module(module_name)
    if not group:
        return Registered(kind=kind, group=None, used_as=used_as,
                          parts=[Part(name=n, source="builtin") for n in module.builtin_suites()])
    registry: Any = GROUPS[group]
    builtin = list(getattr(module, "BUILTIN", ()))  # names a capability computes itself (alignments)
    # a part a tailorbench module registered on import (no plugin is imported here but by its entry point)
    parts = [Part(name=n, source="builtin") for n in builtin]
    parts += [Part(name=n, source=source if source != "registered" else "builtin")
              for n in registry.names() if n not in builtin for source in (registry.source(n),)]
    return Registered(kind=kind, group=registry.group, used_as=used_as, parts=parts)


def registered(kind: str | None = None) -> list[Registered]:
    """What is registered of one kind (`judges`, `backends`, `layouts`, ...: `KINDS`), or of every kind: each name
    users can type, built-in or from an installed plugin's entry point."""
    kinds = [kind_of(kind)] if kind is not None else list(KINDS)
    return [_listing(k) for k in kinds]
