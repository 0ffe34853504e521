"""tailorbench: human-grounded evaluation of LLM personalization.

`import tailorbench as tb` gives every `tailor` verb under its name, imported on first use (so this import
stays light): `tb.eval`, `tb.report`, `tb.compare`, `tb.agree`, `tb.tiers`, `tb.train_rm`, `tb.gen_eval`,
`tb.build`, `tb.annotate.*`, `tb.stages.*`, each with an `*_async` twin; see docs/python.md.

`tb.build`, `tb.annotate`, `tb.stages`, `tb.view` (and `tb.evaluate`, today's name of `tb.eval` over several
judges) name verbs and packages at once: attribute access gives the verbs first and the package's own attributes
(its submodules) after, and imports (`from tailorbench.stages.x import y`) reach the packages as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

from tailorbench.version import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `import tailorbench` does not import typing (a third of its time)
if TYPE_CHECKING:
    from typing import Any

    from tailorbench import api_annotate as annotate
    from tailorbench import api_stages as stages
    from tailorbench.api import agree as agree
    from tailorbench.api import agree_async as agree_async
    from tailorbench.api import build as build
    from tailorbench.api import build_async as build_async
    from tailorbench.api import cache_clear as cache_clear
    from tailorbench.api import cache_stats as cache_stats
    from tailorbench.api import check_data as check_data
    from tailorbench.api import check_data_async as check_data_async
    from tailorbench.api import compare_runs as compare
    from tailorbench.api import compare_runs_async as compare_async
    from tailorbench.api import convert_data as convert_data
    from tailorbench.api import convert_data_async as convert_data_async
    from tailorbench.api import eval as eval
    from tailorbench.api import eval_async as eval_async
    from tailorbench.api import eval_many as eval_many
    from tailorbench.api import eval_many_async as eval_many_async
    from tailorbench.api import eval_resume as eval_resume
    from tailorbench.api import eval_resume_async as eval_resume_async
    from tailorbench.api import evaluate as evaluate
    from tailorbench.api import gen_eval_resume as gen_eval_resume
    from tailorbench.api import gen_eval_resume_async as gen_eval_resume_async
    from tailorbench.api import gen_eval_run as gen_eval
    from tailorbench.api import gen_eval_run_async as gen_eval_async
    from tailorbench.api import push_data as push_data
    from tailorbench.api import push_data_async as push_data_async
    from tailorbench.api import report_runs as report
    from tailorbench.api import report_runs_async as report_async
    from tailorbench.api import resume as resume
    from tailorbench.api import resume_async as resume_async
    from tailorbench.api import run_failures as run_failures
    from tailorbench.api import tiers as tiers
    from tailorbench.api import tiers_async as tiers_async
    from tailorbench.api import train_rm as train_rm
    from tailorbench.api import train_rm_async as train_rm_async
    from tailorbench.api import view as view
    from tailorbench.api import view_async as view_async
    from tailorbench.api_models import AgreeResult as AgreeResult
    from tailorbench.api_models import BuildResult as BuildResult
    from tailorbench.api_models import CompareResult as CompareResult
    from tailorbench.api_models import EvalResult as EvalResult
    from tailorbench.api_models import GenEvalResult as GenEvalResult
    from tailorbench.api_models import TiersResult as TiersResult
    from tailorbench.api_models import TrainResult as TrainResult
    from tailorbench.evaluate.runner import EvalConfig as EvalConfig
    from tailorbench.geneval.config import GenEvalConfig as GenEvalConfig
    from tailorbench.train.config import RMTrainConfig as RMTrainConfig

#: public name -> (module, attribute); the verbs' names first, then today's names (aliases) and the types
_LAZY: dict[str, tuple[str, str]] = {
    "eval": ("tailorbench.api", "eval"),
    "eval_async": ("tailorbench.api", "eval_async"),
    "eval_many": ("tailorbench.api", "eval_many"),
    "eval_many_async": ("tailorbench.api", "eval_many_async"),
    "eval_resume": ("tailorbench.api", "eval_resume"),
    "eval_resume_async": ("tailorbench.api", "eval_resume_async"),
    "report": ("tailorbench.api", "report_runs"),
    "report_async": ("tailorbench.api", "report_runs_async"),
    "compare": ("tailorbench.api", "compare_runs"),
    "compare_async": ("tailorbench.api", "compare_runs_async"),
    "agree": ("tailorbench.api", "agree"),
    "agree_async": ("tailorbench.api", "agree_async"),
    "tiers": ("tailorbench.api", "tiers"),
    "tiers_async": ("tailorbench.api", "tiers_async"),
    "train_rm": ("tailorbench.api", "train_rm"),
    "train_rm_async": ("tailorbench.api", "train_rm_async"),
    "gen_eval": ("tailorbench.api", "gen_eval_run"),
    "gen_eval_async": ("tailorbench.api", "gen_eval_run_async"),
    "gen_eval_resume": ("tailorbench.api", "gen_eval_resume"),
    "gen_eval_resume_async": ("tailorbench.api", "gen_eval_resume_async"),
    "build_async": ("tailorbench.api", "build_async"),
    "check_data": ("tailorbench.api", "check_data"),
    "check_data_async": ("tailorbench.api", "check_data_async"),
    "convert_data": ("tailorbench.api", "convert_data"),
    "convert_data_async": ("tailorbench.api", "convert_data_async"),
    "push_data": ("tailorbench.api", "push_data"),
    "push_data_async": ("tailorbench.api", "push_data_async"),
    "cache_stats": ("tailorbench.api", "cache_stats"),
    "cache_clear": ("tailorbench.api", "cache_clear"),
    "run_failures": ("tailorbench.api", "run_failures"),
    "view_async": ("tailorbench.api", "view_async"),
    # today's names (`evaluate` is a group below: `tailorbench.evaluate` is also a subpackage)
    "resume": ("tailorbench.api", "resume"),
    "resume_async": ("tailorbench.api", "resume_async"),
    # configurations and results
    "EvalConfig": ("tailorbench.evaluate.runner", "EvalConfig"),
    "GenEvalConfig": ("tailorbench.geneval.config", "GenEvalConfig"),
    "RMTrainConfig": ("tailorbench.train.config", "RMTrainConfig"),
    "EvalResult": ("tailorbench.api_models", "EvalResult"),
    "CompareResult": ("tailorbench.api_models", "CompareResult"),
    "AgreeResult": ("tailorbench.api_models", "AgreeResult"),
    "TiersResult": ("tailorbench.api_models", "TiersResult"),
    "GenEvalResult": ("tailorbench.api_models", "GenEvalResult"),
    "BuildResult": ("tailorbench.api_models", "BuildResult"),
    "TrainResult": ("tailorbench.api_models", "TrainResult"),
}

#: names that are a group of verbs: name -> (module of the verbs (its `__all__`) or None, the verb `tb.NAME(...)`
#: calls as (module, attribute) or None, the package whose modules the group also shows)
_GROUPS: dict[str, tuple[str | None, tuple[str, str] | None, str]] = {
    "evaluate": (None, ("tailorbench.api", "evaluate"), "tailorbench.evaluate"),
    "build": ("tailorbench.api_build", ("tailorbench.api", "build"), "tailorbench.construction"),
    "annotate": ("tailorbench.api_annotate", None, "tailorbench.annotate"),
    "stages": ("tailorbench.api_stages", None, "tailorbench.stages"),
    "view": (None, ("tailorbench.api", "view"), "tailorbench.view"),
}

#: what `from tailorbench import *` and type checkers see (tests/test_python_api.py: every name resolves)
__all__ = [
    "AgreeResult",
    "BuildResult",
    "CompareResult",
    "EvalConfig",
    "EvalResult",
    "GenEvalConfig",
    "GenEvalResult",
    "RMTrainConfig",
    "TiersResult",
    "TrainResult",
    "__version__",
    "agree",
    "agree_async",
    "annotate",
    "build",
    "build_async",
    "cache_clear",
    "cache_stats",
    "check_data",
    "check_data_async",
    "compare",
    "compare_async",
    "convert_data",
    "convert_data_async",
    "eval",
    "eval_async",
    "eval_many",
    "eval_many_async",
    "eval_resume",
    "eval_resume_async",
    "evaluate",
    "gen_eval",
    "gen_eval_async",
    "gen_eval_resume",
    "gen_eval_resume_async",
    "push_data",
    "push_data_async",
    "report",
    "report_async",
    "resume",
    "resume_async",
    "run_failures",
    "stages",
    "tiers",
    "tiers_async",
    "train_rm",
    "train_rm_async",
    "view",
    "view_async",
]


class VerbGroup(types.ModuleType):
    """`tb.stages`, `tb.annotate`, `tb.build`, `tb.evaluate`: the verbs of a module of twins (the names in its
    `__all__`), then the package behind them (the subpackage of the same name, so `tb.evaluate.runner` and the
    import system's lookups still find its submodules; `tb.build.pipeline` is `tailorbench.construction.pipeline`);
    `tb.build(...)`, `tb.evaluate(...)` call their verb."""

    def __init__(self, name: str, verbs: str | None, call: tuple[str, str] | None, package: str) -> None:
        super().__init__(f"{__name__}.{name}")
        self.__dict__["_verbs"], self.__dict__["_call"], self.__dict__["_package"] = verbs, call, package

    def _verb_names(self) -> tuple[types.ModuleType | None, tuple[str, ...]]:
        if self.__dict__["_verbs"] is None:
            return None, ()
        module = importlib.import_module(self.__dict__["_verbs"])
        return module, tuple(getattr(module, "__all__", ()))

    def __getattr__(self, name: str) -> Any:
        verbs, names = self._verb_names()
        if verbs is not None and name in names:
            return getattr(verbs, name)
        package = importlib.import_module(self.__dict__["_package"])
        if not hasattr(package, name) and importlib.util.find_spec(f"{package.__name__}.{name}") is not None:
            return importlib.import_module(f"{package.__name__}.{name}")  # a submodule not imported yet
        return getattr(package, name)

    def __dir__(self) -> list[str]:
        package = importlib.import_module(self.__dict__["_package"])
        return sorted(set(self._verb_names()[1]) | set(dir(package)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self.__dict__["_call"]
        if call is None:
            raise TypeError(f"{self.__name__} is a group of verbs (see dir()), not a verb")
        return getattr(importlib.import_module(call[0]), call[1])(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<verbs {self.__name__!r}>"


class _Package(types.ModuleType):
    """The package module: it keeps a verb group under its name when the import system binds the subpackage
    of that name (`import tailorbench.stages.x` sets `tailorbench.stages`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _GROUPS and isinstance(value, types.ModuleType) and not isinstance(value, VerbGroup):
            return  # the subpackage stays in sys.modules; the group falls back to it
        super().__setattr__(name, value)


def __getattr__(name: str) -> Any:
    if name in _GROUPS:
        value: Any = VerbGroup(name, *_GROUPS[name])
    elif name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


sys.modules[__name__].__class__ = _Package
