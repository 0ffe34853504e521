"""tailorbench: human-grounded evaluation of LLM personalization.

`import tailorbench as tb` gives every `tailor` verb under its name, imported on first use (so this import stays
light): `tb.X is tailorbench.api.X` for every public name (`tb.eval`, `tb.resume`, `tb.report`, `tb.compare`,
`tb.agree`, `tb.tiers`, `tb.train_rm`, `tb.gen_eval`, `tb.build`, `tb.view`, the groups `tb.stages.*`,
`tb.annotate.*` and `tb.study.*`, the result models and configs), declared once in `tailorbench._names`; see
docs/python.md.
"""

from __future__ import annotations

import sys as _sys
import types as _types

from tailorbench._names import DEPRECATED, PUBLIC
from tailorbench.version import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `import tailorbench` does not import typing (a third of its time)
if TYPE_CHECKING:
    from typing import Any

    from tailorbench.api import *  # noqa: F403  (the names of `_names.PUBLIC`, typed)

#: `tailorbench.api`'s names and the version; tests/test_python_api.py checks `tb.X is tailorbench.api.X`
__all__ = ["__version__", *PUBLIC]


def __getattr__(name: str) -> Any:
    import importlib

    if name in DEPRECATED:
        import warnings

        from tailorbench.api._deprecated import resolve, warning

        warnings.warn(warning("tailorbench", name), DeprecationWarning, stacklevel=2)
        return resolve(name, importlib.import_module("tailorbench.api"))
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("tailorbench.api"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Facade(_types.ModuleType):
    """`tb.arena` is the API's verbs even after the capability package `tailorbench.arena` was imported (the
    import system sets the parent's attribute of a loaded subpackage; this property keeps the facade's name)."""

    @property
    def arena(self) -> _types.ModuleType:
        from tailorbench.api import arena as verbs

        return verbs

    @arena.setter
    def arena(self, _module: _types.ModuleType) -> None:
        pass  # the subpackage stays reachable as sys.modules["tailorbench.arena"]


_sys.modules[__name__].__class__ = _Facade
