"""One generic, lazy, typed registry for every extension point: judges, model backends, benchmark layouts,
settings and annotation task types.

Why one: a contributor learns one way to add a part, and a plugin adds one without editing tailorbench.
Three ways to fill a registry, looked up in this order:

* `@REGISTRY.register("name")` in the module that defines the part (built-in parts do this);
* built-in parts declared by module (`lazy={"name": "tailorbench.x"}`): the module is imported on first use,
  so `tailor --help` never imports torch;
* installed plugins, by entry point in the registry's group (`tailorbench.judges`, `tailorbench.backends`,
  `tailorbench.layouts`, `tailorbench.settings`, `tailorbench.task_types`). The entry point names the object
  itself (`myjudge = "my_pkg.judges:make_judge"`) or a module whose import registers it
  (`myjudge = "my_pkg.judges"`); the entry point's name is the name users type.

Names are case-insensitive. A name registered twice is an error unless the second registration says
`replace=True` (a plugin cannot shadow a built-in by accident).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any, Generic, TypeVar

from tailorbench.errors import ConfigError

T = TypeVar("T")

#: every registry by entry-point group (docs and the plugin test list them from here)
GROUPS: dict[str, Registry[object]] = {}


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the known name closest to a mistyped one (difflib's ratio 0.75 or more, case
    aside: a typo, not a near word such as `ranking` for `ab_rating`), else ""; every "unknown NAME" error adds
    it (judges, backends, layouts, settings, task types, suites, option values: `options.as_choice`)."""
    choices = {str(k).lower(): str(k) for k in known}
    close = difflib.get_close_matches(str(name).strip().lower(), list(choices), n=1, cutoff=0.75)
    return f" (did you mean {choices[close[0]]!r}?)" if close else ""


class Registry(Generic[T]):
    """Name -> part (a factory, a class, a function: whatever this kind of part is)."""

    def __init__(self, kind: str, group: str, lazy: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._parts: dict[str, T] = {}
        self._lazy: dict[str, str] = {k.lower(): v for k, v in (lazy or {}).items()}
        self._plugins: dict[str, importlib.metadata.EntryPoint] | None = None
        GROUPS[group] = self  # type: ignore[assignment]

    # -- filling -----------------------------------------------------------------------------------------

    def register(self, name: str, *, replace: bool = False) -> Callable[[T], T]:
        """Decorator: make `part` addressable as `name`."""

        def wrap(part: T) -> T:
            self.add(name, part, replace=replace)
            return part

        return wrap

    def add(self, name: str, part: T, *, replace: bool = False) -> None:
        key = name.strip().lower()
        if not key:
            raise ValueError(f"a {self.kind} needs a name")
        if key in self._parts and self._parts[key] is not part and not replace:
            raise ConfigError(f"{self.kind} {key!r} is registered twice (pass replace=True to override it)")
        self._parts[key] = part

    def remove(self, name: str) -> None:
        """Forget a registered part (a test that registers its own part takes it out again afterwards)."""
        self._parts.pop(name.strip().lower(), None)

    def declare(self, name: str, module: str) -> None:
        """A built-in part that `module` registers when imported (imported on first use)."""
        self._lazy[name.strip().lower()] = module

    # -- lookup ------------------------------------------------------------------------------------------

    def get(self, name: str) -> T:
        """The part called `name`; an unknown name is a ConfigError listing the known ones."""
        key = name.strip().lower()
        part = self._parts.get(key)
        if part is None:
            part = self._load(key)
        if part is None:
            raise ConfigError(f"unknown {self.kind} {name!r}{did_you_mean(name, self.names())}; known: "
                              f"{', '.join(self.names()) or 'none'}")
        return part

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = name.strip().lower()
        return key in self._parts or key in self._lazy or key in self._entry_points()

    def names(self) -> list[str]:
        """Every name users can type: registered, built-in (not yet imported) and installed plugins."""
        return sorted({*self._parts, *self._lazy, *self._entry_points()})

    def loaded(self) -> Iterator[tuple[str, T]]:
        """The parts imported so far (for callers that scan, e.g. layout detection, after `load_all`)."""
        return iter(sorted(self._parts.items()))

    def load_all(self) -> list[tuple[str, T]]:
        """Import every built-in and plugin part (for detection over all layouts); returns them by name."""
        for key in self.names():
            if key not in self._parts:
                self._load(key)
        return sorted(self._parts.items())

    def source(self, name: str) -> str:
        """Where a part comes from: `builtin`, `plugin:DIST` or `registered` (for manifests and `--help`)."""
        key = name.strip().lower()
        if key in self._lazy:
            return "builtin"
        point = self._entry_points().get(key)
        if point is not None:
            dist = getattr(point, "dist", None)
            return f"plugin:{dist.name}" if dist is not None else "plugin"
        return "registered"

    # -- internals ---------------------------------------------------------------------------------------

    def _entry_points(self) -> dict[str, importlib.metadata.EntryPoint]:
        if self._plugins is None:
            found = importlib.metadata.entry_points(group=self.group)
            self._plugins = {point.name.strip().lower(): point for point in found}
        return self._plugins

    def _load(self, key: str) -> T | None:
        module = self._lazy.get(key)
        if module is not None:
            importlib.import_module(module)
            return self._parts.get(key)
        point = self._entry_points().get(key)
        if point is None:
            return None
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin is the user's to fix: say which one
            raise ConfigError(f"the {self.kind} plugin {key!r} ({point.value}) failed to load: "
                              f"{type(exc).__name__}: {exc}") from exc
        if key not in self._parts and not isinstance(loaded, ModuleType):
            self._parts[key] = loaded  # the entry point names the part itself
        part = self._parts.get(key)
        if part is None:
            raise ConfigError(f"the {self.kind} plugin {key!r} ({point.value}) registered nothing under that name")
        return part

    def refresh(self) -> None:
        """Forget the entry points read so far (after installing a plugin in the same process)."""
        self._plugins = None


#: the judging settings (what context a judge sees: `persona`, `none`, `rag`, plugins). Declared here, at the
#: ground, so that every reader of a run checks a prediction's setting against the same names
#: (`schema.check_prediction_line`) without importing the evaluation layer; the parts register themselves in
#: tailorbench.evaluate.settings (`register_setting`) when first used.
SETTINGS: Registry[Any] = Registry("setting", "tailorbench.settings", lazy={
    "persona": "tailorbench.evaluate.settings", "none": "tailorbench.evaluate.settings",
    "rag": "tailorbench.evaluate.rag_setting"})


def setting_names() -> frozenset[str]:
    """Every setting a run may have used (registered, built-in and installed plugins), lower case."""
    return frozenset(SETTINGS.names())
