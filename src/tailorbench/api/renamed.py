"""Public names kept for one release after a rename or a removal (CHANGELOG.md): the old name still imports,
from the module or from `tb`, with a DeprecationWarning that names what replaces it.

A module installs it as its PEP 562 `__getattr__`, hidden from type checkers so that mypy keeps reporting
unknown names (an old name included) instead of typing every attribute of the module as Any::

    if not TYPE_CHECKING:
        __getattr__ = renamed(__name__, {"old": "new"}, twins=("verb", ...))

`twins` are the verbs whose `*_async` twin was removed (it only ran the blocking verb in a worker thread, and
the blocking verb works inside a running event loop): `verb_async`, and `old_async` of a renamed verb, still
give that awaitable for one release.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import warnings
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any


def in_a_thread(fn: Callable[..., Any], name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    """An awaitable that runs the blocking `fn` in a worker thread (what a removed `*_async` twin was)."""

    @functools.wraps(fn)
    async def twin(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    twin.__name__ = twin.__qualname__ = name
    return twin


def twin_removed(module: str, name: str, verb: str) -> str:
    """The DeprecationWarning's text for a removed twin `module.name` of `module.verb`."""
    return (f"{module}.{name} is deprecated and goes in the next release: use {module}.{verb} (the blocking verb "
            "works inside a running event loop) (CHANGELOG.md)")


def renamed(module: str, names: Mapping[str, str], twins: Iterable[str] = ()) -> Callable[[str], Any]:
    """A module `__getattr__` for `module` that answers each old name of `names` (old -> new) with the new name's
    object, and each removed twin of `twins` with an awaitable running its verb in a thread, with a
    DeprecationWarning; any other name is the usual AttributeError."""
    verbs = frozenset(twins)

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is not None:
            warnings.warn(f"{module}.{name} is renamed {new}; the old name goes in the next release (CHANGELOG.md)",
                          DeprecationWarning, stacklevel=2)
            return getattr(sys.modules[module], new)
        verb = name.removesuffix("_async")
        verb = names.get(verb, verb)
        if name.endswith("_async") and verb in verbs:
            warnings.warn(twin_removed(module, name, verb), DeprecationWarning, stacklevel=2)
            return in_a_thread(getattr(sys.modules[module], verb), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
