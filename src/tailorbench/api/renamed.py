"""Public names kept for one release after a rename (CHANGELOG.md): the old name still imports, from the module
or from `tb`, and gives the new object with a DeprecationWarning that names the new one.

A module installs it as its PEP 562 `__getattr__`, hidden from type checkers so that mypy keeps reporting
unknown names (an old name included) instead of typing every attribute of the module as Any::

    if not TYPE_CHECKING:
        __getattr__ = renamed(__name__, {"old": "new"})
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def renamed(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `module` that answers each old name of `names` (old -> new) with the new name's
    object and a DeprecationWarning; any other name is the usual AttributeError."""

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is renamed {new}; the old name goes in the next release (CHANGELOG.md)",
                      DeprecationWarning, stacklevel=2)
        return getattr(sys.modules[module], new)

    return __getattr__
