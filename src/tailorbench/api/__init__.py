"""The public API: every `tailor` verb as a typed function (`tb.X is tailorbench.api.X`), returning the pydantic
models of `api.results` that mirror the JSON the verb writes.

Verbs by area, one module each: `evaluation` (eval, resume, report, compare), `data` (data check/convert/push,
cache), `agreement` (agree, tiers), `estimation` (estimate, estimate sample, estimate plan), `training`
(train-rm), `generation` (gen-eval), `benchmarks` (the runners eval and gen-eval hand a benchmark or a suite to),
`construction` (build), `batches` (batch status/cancel), `viewing` (view); the verb groups `stages` (`tailor
stages ...`), `annotate` (`tailor annotate ...`), `study` (`tailor study ...`) and `arena` (`tailor arena ...`) are
modules of verbs. The names are declared once, in `tailorbench._names`; they resolve on first use (PEP 562), so
importing this package imports no capability until a verb is asked for. The CLI (`tailorbench.cli`) is a thin
layer over these functions and nothing else. A name removed from the API still resolves for one release, with a
DeprecationWarning naming its replacement (`_names.DEPRECATED`).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import TYPE_CHECKING, Any

from tailorbench._names import AREAS, DEPRECATED, GROUPS, PUBLIC

if TYPE_CHECKING:  # what mypy reads; tests/test_python_api.py checks it names exactly `_names.PUBLIC`
    from tailorbench.api import annotate as annotate
    from tailorbench.api import arena as arena
    from tailorbench.api import stages as stages
    from tailorbench.api import study as study
    from tailorbench.api.agreement import agree as agree
    from tailorbench.api.agreement import tiers as tiers
    from tailorbench.api.batches import batch_cancel as batch_cancel
    from tailorbench.api.batches import batch_status as batch_status
    from tailorbench.api.benchmarks import data_task as data_task
    from tailorbench.api.construction import build as build
    from tailorbench.api.construction import build_async as build_async
    from tailorbench.api.data import cache_clear as cache_clear
    from tailorbench.api.data import cache_stats as cache_stats
    from tailorbench.api.data import check_data as check_data
    from tailorbench.api.data import convert_data as convert_data
    from tailorbench.api.data import push_data as push_data
    from tailorbench.api.estimation import estimate as estimate
    from tailorbench.api.estimation import estimate_plan as estimate_plan
    from tailorbench.api.estimation import estimate_sample as estimate_sample
    from tailorbench.api.evaluation import EvalConfig as EvalConfig
    from tailorbench.api.evaluation import compare as compare
    from tailorbench.api.evaluation import eval as eval
    from tailorbench.api.evaluation import eval_async as eval_async
    from tailorbench.api.evaluation import report as report
    from tailorbench.api.evaluation import resume as resume
    from tailorbench.api.evaluation import run_failures as run_failures
    from tailorbench.api.generation import GenEvalConfig as GenEvalConfig
    from tailorbench.api.generation import gen_eval as gen_eval
    from tailorbench.api.results import AgreeResult as AgreeResult
    from tailorbench.api.results import BuildResult as BuildResult
    from tailorbench.api.results import ChoiceResult as ChoiceResult
    from tailorbench.api.results import CompareResult as CompareResult
    from tailorbench.api.results import EstimatePlanResult as EstimatePlanResult
    from tailorbench.api.results import EstimateResult as EstimateResult
    from tailorbench.api.results import EstimateSampleResult as EstimateSampleResult
    from tailorbench.api.results import EvalResult as EvalResult
    from tailorbench.api.results import GenEvalResult as GenEvalResult
    from tailorbench.api.results import PrefEvalGenerationResult as PrefEvalGenerationResult
    from tailorbench.api.results import SuiteResult as SuiteResult
    from tailorbench.api.results import TiersResult as TiersResult
    from tailorbench.api.results import TrainResult as TrainResult
    from tailorbench.api.training import RMTrainConfig as RMTrainConfig
    from tailorbench.api.training import train_rm as train_rm
    from tailorbench.api.viewing import view as view

_WHERE = {name: area for area, names in AREAS.items() for name in names}

if not TYPE_CHECKING:  # for mypy, the imports above are the names (`from tailorbench.api import *` takes them)
    __all__ = list(PUBLIC)


def __getattr__(name: str) -> Any:
    if name in GROUPS:
        value: Any = importlib.import_module(f"{__name__}.{name}")
    elif name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    elif name in DEPRECATED:
        from tailorbench.api._deprecated import resolve, warning

        warnings.warn(warning("tailorbench.api", name), DeprecationWarning, stacklevel=2)
        return resolve(name, sys.modules[__name__])
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(PUBLIC))
