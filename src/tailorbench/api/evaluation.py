"""`tailor eval`, `report`, `compare`: judges on pairwise benchmarks, leaderboards, paired comparisons.

Each verb returns the pydantic model of the JSON it writes (`results.EvalResult` is results.json); the CLI
prints those models. A run directory of any kind is read through its registered `run_kinds.RunKind`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tailorbench.aio import async_twin
from tailorbench.api.results import (
    ChoiceResult,
    CompareResult,
    EvalResult,
    GenEvalResult,
    PrefEvalGenerationResult,
    ReportedRun,
)
from tailorbench.errors import ConfigError
from tailorbench.evaluate.runner import EvalConfig, load_config, run_eval, run_eval_async, run_matrix
from tailorbench.failures import FailureCheck, check_max_failed
from tailorbench.options import as_int, check_writable

__all__ = [
    "EvalConfig",
    "compare",
    "compare_async",
    "eval",
    "eval_async",
    "eval_many",
    "eval_many_async",
    "eval_resume",
    "eval_resume_async",
    "registered_parts",
    "report",
    "report_async",
    "run_failures",
]


def _eval_config(config: EvalConfig | None, fields: dict[str, Any]) -> EvalConfig:
    """An `EvalConfig` from a base and fields, with the choices checked as `tailor eval` checks them."""
    base = asdict(config) if config is not None else {}
    merged = EvalConfig(**{**base, **fields})
    if merged.orders not in ("both", "random", "authors"):
        raise ConfigError("--orders must be both, random or authors")
    if merged.ci_unit not in ("case", "user"):
        raise ConfigError("--ci-unit must be case or user")
    check_max_failed(merged.max_failed)
    return merged


def eval(data: str = "demo", judge: str = "longer", setting: str = "persona", *, out: str | Path,
         config: EvalConfig | None = None, progress: bool = False, **fields: Any) -> EvalResult:
    """`tailor eval`: one judge in one setting over a benchmark into the run directory `out`; returns its
    results.json. `fields` are the other `EvalConfig` fields (`limit`, `seed`, `tiers`, `judge_options`, ...),
    `config` a base for them."""
    single = _eval_config(config, {**fields, "data": data, "judge": judge, "setting": setting})
    return EvalResult.from_run(run_eval(single, Path(out), progress=progress))


async def eval_async(data: str = "demo", judge: str = "longer", setting: str = "persona", *, out: str | Path,
                     config: EvalConfig | None = None, progress: bool = False, **fields: Any) -> EvalResult:
    """`eval` as a coroutine: the judge's calls run on the caller's event loop (`await tb.eval_async(...)`)."""
    single = _eval_config(config, {**fields, "data": data, "judge": judge, "setting": setting})
    return EvalResult.from_run(await run_eval_async(single, Path(out), progress=progress))


def eval_many(judges: Sequence[str], settings: Sequence[str] = ("persona",), data: str = "demo", *,
              out: str | Path, config: EvalConfig | None = None, progress: bool = False, repeat: int = 1,
              **fields: Any) -> list[EvalResult]:
    """`tailor eval -j A -j B -s S ...`: one run directory per judge x setting under `out`, plus the merged
    report at `out` (one judge in one setting: `out` is the run directory); the results in that order.
    `repeat` N > 1: each run judged N - 1 more times without the call cache (`RUN/repeats/K`), its determinism
    in results.json and the report (`tailor eval --repeat N`)."""
    from tailorbench.evaluate.repeats import check_repeat, run_repeats

    judges, settings = list(judges) or ["longer"], list(settings) or ["persona"]
    base = _eval_config(config, {**fields, "data": data, "judge": judges[0], "setting": settings[0]})
    check_repeat(repeat, base.executor)
    if len(judges) == 1 and len(settings) == 1:
        runs = [run_eval(base, Path(out), progress=progress)]
    else:
        runs = run_matrix(base, judges, settings, Path(out), progress=progress)
    if repeat > 1:
        for run in runs:
            run_repeats(load_config(run), run, repeat, progress=progress)
        if len(runs) > 1:
            from tailorbench.run_kinds import write_merged_report

            write_merged_report(runs, Path(out))
    return [EvalResult.from_run(r) for r in runs]


def eval_resume(run_dir: str | Path, progress: bool = False, max_failed: float | None = None) -> EvalResult:
    """`tailor eval --resume RUN_DIR`: continue an interrupted run, keeping what was finished (`max_failed`:
    replace the run's own threshold of failed verdicts); returns the finished run's results."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    if max_failed is not None:
        config.max_failed = check_max_failed(max_failed)
    return EvalResult.from_run(run_eval(config, run_dir, resume=True, progress=progress))


def run_failures(run_dir: str | Path, max_failed: float | None = None, what: str | None = None) -> FailureCheck:
    """Whether a run's failed verdicts (or calls) exceed `max_failed` (the run's own when None), for a run
    directory of any kind: `.exceeded` is what makes the verb exit 3, `.message()` says why."""
    from tailorbench.run_kinds import kind_of

    kind = kind_of(Path(run_dir))
    return kind.check(kind.load_results(Path(run_dir)), max_failed, what or str(run_dir))


def _run_dirs(runs: Sequence[str | Path]) -> list[Path]:
    """The run directories `report` and `compare` read, each checked (a corrupt manifest is a DataError; a
    pairwise run's, one without judge and setting too)."""
    from tailorbench.evaluate.results import read_manifest
    from tailorbench.run_kinds import DEFAULT_KIND, run_kind

    dirs = [Path(r) for r in runs]
    for run in dirs:
        if not run.is_dir():
            what = "no such directory" if not run.exists() else "a file, not a run directory"
            raise ConfigError(f"{run}: {what} (pass run directories, e.g. runs/x, not the files in them)")
        if not (run / "manifest.json").is_file():
            inner = sorted(p.parent.name for p in run.glob("*/manifest.json"))
            hint = f"; it holds runs: {', '.join(inner[:5])}" if inner else ""
            raise ConfigError(f"{run} is not a run directory: manifest.json is missing{hint}")
        if run_kind(run) == DEFAULT_KIND:
            read_manifest(run)
    return dirs


def report(runs: Sequence[str | Path], out: str | Path, push: str | None = None,
           private: bool = False) -> list[ReportedRun]:
    """`tailor report RUN...`: a merged leaderboard (report.md, report.html) at `out`, laid out by the runs'
    kind (gen-eval runs side by side by the gen-eval report, multiple-choice and PrefEval generation runs by
    theirs); with `push` (OWNER/NAME), also published as a hub leaderboard (results.jsonl and the report as its
    card). Returns each run's results."""
    from tailorbench.run_kinds import write_merged_report

    if not runs:
        raise ConfigError("report needs at least one run directory")
    if push is not None:
        from tailorbench.datasets.hub_repo import check_repo_id

        check_repo_id(push)
    dirs = _run_dirs(runs)
    check_writable("--out", out, directory=True)
    merged = write_merged_report(dirs, Path(out))
    if push is not None:
        from tailorbench.datasets.hub_push import push_report

        push_report(dirs, Path(out), push, private=private)
    models: dict[str, type[ReportedRun]] = {"gen-eval": GenEvalResult, "multiple-choice": ChoiceResult,
                                            "prefeval-generation": PrefEvalGenerationResult}
    results: list[ReportedRun] = []
    for run, r in zip(dirs if len(dirs) == len(merged) else [None] * len(merged), merged):
        results.append(models.get(str(r.get("kind")), EvalResult).model_validate(r).located(run))
    return results


def compare(run_a: str | Path, run_b: str | Path, *more: str | Path, n_boot: int = 1000,
            seed: int = 0) -> CompareResult:
    """`tailor compare A B [C ...]`: each run after the first against the first, on the cases they share,
    overall and per split x tier: the paired difference with bootstrap intervals over cases and users, the exact
    McNemar test on the discordant cases, Holm-adjusted over the comparisons when there are several. The top
    level is A vs B overall (`difference`, `ci`, `p_two_sided`); `cells` its cells; `comparisons` every pair."""
    from tailorbench.evaluate.compare import compare_runs

    as_int("--n-boot", n_boot, minimum=1)
    runs = _run_dirs([run_a, run_b, *more])
    return CompareResult.model_validate(compare_runs(runs, n_boot=n_boot, seed=seed))


def registered_parts() -> str:
    """The judges and model backends that are registered (built-ins and plugins), as `tailor eval --help` shows
    them; the two registries are light modules."""
    from tailorbench.judges.base import JUDGES
    from tailorbench.models.backends import BACKENDS

    return (f"Judges: {', '.join(JUDGES.names())} (a spec is NAME or NAME:ARG, e.g. llm:openai:MODEL@URL, "
            "rm:CHECKPOINT).\n\n"
            f"Model backends: {', '.join(BACKENDS.names())}.")


# `*_async` twins of the blocking verbs (a worker thread each; `eval_async` runs on the caller's loop above)
eval_many_async = async_twin(eval_many)
eval_resume_async = async_twin(eval_resume)
report_async = async_twin(report)
compare_async = async_twin(compare)
