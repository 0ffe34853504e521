"""What the names removed from the API resolve to for one more release (`_names.DEPRECATED`, CHANGELOG.md).

Each old entry point keeps its old arguments and results and calls the one function that replaced it; each old
`*_async` twin that only ran a blocking verb in a worker thread is made again here on first use. The warning is
given by the module `__getattr__` the name is asked of (`tailorbench` or `tailorbench.api`), at the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from tailorbench._names import DEPRECATED
from tailorbench.api.renamed import in_a_thread, twin_removed


def warning(module: str, name: str) -> str:
    """The DeprecationWarning's text for `module.name`."""
    new = DEPRECATED[name]
    if name.endswith("_async") and not new.endswith("_async"):
        return twin_removed(module, name, new)
    return f"{module}.{name} is deprecated and goes in the next release: use {module}.{new} (CHANGELOG.md)"


def eval_many(judges: Sequence[str], settings: Sequence[str] = ("persona",), data: str = "demo", *,
              out: str | Path, config: Any = None, progress: bool = False, repeat: int = 1,
              **fields: Any) -> Any:
    """`tb.eval(data, list(judges), list(settings), out=..., task="pairwise")`."""
    from tailorbench.api.evaluation import eval

    return eval(data, list(judges) or ["longer"], list(settings) or ["persona"], out=out, config=config,
                task="pairwise", progress=progress, repeat=repeat, **fields)


def eval_benchmark(judges: Sequence[str], settings: Sequence[str] = ("persona",), data: str = "demo", *,
                   out: str | Path, task: str = "auto", progress: bool = False, protocol: str = "default",
                   scorer_version: str | None = None, **fields: Any) -> Any:
    """`tb.eval(data, list(judges), list(settings), out=..., task=...)`."""
    from tailorbench.api.evaluation import eval

    return eval(data, list(judges) or ["longer"], list(settings) or ["persona"], out=out, task=task,
                progress=progress, protocol=protocol, scorer_version=scorer_version, **fields)


def eval_suite(suite: str | Path, out: str | Path, *, data_root: str | Path | None = None,
               judges: Sequence[str] | None = None, settings: Sequence[str] | None = None,
               progress: bool = False, skip_missing: bool = False) -> Any:
    """`tb.eval(suite=suite, out=..., judge=judges, setting=settings)`."""
    from tailorbench.api.evaluation import eval

    return eval(suite=suite, out=out, judge=list(judges) if judges else None,
                setting=list(settings) if settings else None, data_root=data_root, progress=progress,
                skip_missing=skip_missing)


def _resume(run_dir: str | Path, progress: bool = False, max_failed: float | None = None) -> Any:
    from tailorbench.api.evaluation import resume

    return resume(run_dir, progress=progress, max_failed=max_failed)


def gen_eval_benchmark(config: Any, out: str | Path, progress: bool = False,
                       data_options: Mapping[str, Any] | None = None) -> Any:
    """`tb.gen_eval(out=..., config=config, data_options=...)`."""
    from tailorbench.api.generation import gen_eval

    return gen_eval(out=out, config=config, progress=progress, data_options=data_options)


_SHIMS: dict[str, Callable[..., Any]] = {
    "eval_many": eval_many, "eval_benchmark": eval_benchmark, "eval_suite": eval_suite,
    "eval_resume": _resume, "eval_benchmark_resume": _resume, "gen_eval_resume": _resume,
    "gen_eval_benchmark_resume": _resume, "gen_eval_benchmark": gen_eval_benchmark,
}


def resolve(name: str, api: ModuleType) -> Any:
    """The object a deprecated name of `tailorbench.api` stands for (no warning: the caller gives it); `api` is
    the API package, passed in by the caller so that this module does not import the package it serves."""
    if name in _SHIMS:
        return _SHIMS[name]
    verb = name.removesuffix("_async")
    if verb in _SHIMS:
        return in_a_thread(_SHIMS[verb], name)
    return in_a_thread(getattr(api, verb), name)
