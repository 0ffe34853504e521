"""`tailor eval`, `report`, `compare`, and `resume` of a run of any kind.

`eval` is the one entry point of `tailor eval`: a pairwise benchmark goes to the judge loop, a multiple-choice one
(PrefEval, PersonaMem) to its models' answers scored by the benchmark's rule, a suite to every benchmark x judge x
setting it names (`api.benchmarks` holds those two runners). `resume` continues a run directory of any kind,
dispatched on the kind its manifest names (`run_kinds`). Each verb returns the pydantic model of the JSON it
writes (`results.EvalResult` is results.json); the CLI prints those models.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, overload

from tailorbench.api.pairwise import eval_config
from tailorbench.api.results import (
    ChoiceResult,
    CompareResult,
    EvalResult,
    GenEvalResult,
    PrefEvalGenerationResult,
    ReportedRun,
    StageReportsResult,
    SuiteResult,
)
from tailorbench.errors import ConfigError
from tailorbench.evaluate.runner import EvalConfig, load_config, run_eval, run_eval_async
from tailorbench.failures import FailureCheck, check_max_failed
from tailorbench.options import as_int, check_writable

__all__ = [
    "EvalConfig",
    "compare",
    "eval",
    "eval_async",
    "registered_parts",
    "report",
    "resume",
    "resumed_by",
    "run_failures",
]

#: several judges or settings: a list or a tuple of specs (a single `str` is one)
Several = list[str] | tuple[str, ...]
#: what `eval` on one judge in one setting returns: results.json of a pairwise run or of a multiple-choice one
BenchmarkRun = EvalResult | ChoiceResult
#: what `resume` returns, by the run's kind
ResumedRun = EvalResult | ChoiceResult | GenEvalResult | PrefEvalGenerationResult | SuiteResult


def _specs(value: str | Sequence[str] | None, default: str | None) -> list[str]:
    if value is None:
        return [default] if default is not None else []
    if isinstance(value, str):
        return [value]
    return list(value) or ([default] if default is not None else [])


@overload
def eval(data: str | Path | None = ..., judge: str | None = ..., setting: str | None = ..., *, out: str | Path,
         config: EvalConfig | None = ..., task: str = ..., protocol: str = ..., scorer_version: str | None = ...,
         repeat: int = ..., suite: None = ..., progress: bool = ..., **fields: Any) -> EvalResult | ChoiceResult: ...


@overload
def eval(data: str | Path | None = ..., judge: Several = ..., setting: str | Several | None = ..., *,
         out: str | Path, config: EvalConfig | None = ..., task: str = ..., protocol: str = ...,
         scorer_version: str | None = ..., repeat: int = ..., suite: None = ..., progress: bool = ...,
         **fields: Any) -> list[EvalResult | ChoiceResult]: ...


@overload
def eval(data: str | Path | None = ..., judge: str | None = ..., setting: Several = ..., *, out: str | Path,
         config: EvalConfig | None = ..., task: str = ..., protocol: str = ..., scorer_version: str | None = ...,
         repeat: int = ..., suite: None = ..., progress: bool = ...,
         **fields: Any) -> list[EvalResult | ChoiceResult]: ...


@overload
def eval(data: None = ..., judge: str | Several | None = ..., setting: str | Several | None = ..., *,
         out: str | Path, suite: str | Path, data_root: str | Path | None = ..., skip_missing: bool = ...,
         progress: bool = ...) -> SuiteResult: ...


def eval(data: str | Path | None = None, judge: str | Sequence[str] | None = None,
         setting: str | Sequence[str] | None = None, *, out: str | Path, config: EvalConfig | None = None,
         task: str = "auto", protocol: str = "default", scorer_version: str | None = None, repeat: int = 1,
         suite: str | Path | None = None, data_root: str | Path | None = None, skip_missing: bool = False,
         progress: bool = False, **fields: Any
         ) -> EvalResult | ChoiceResult | list[EvalResult | ChoiceResult] | SuiteResult:
    """`tailor eval`: judges in settings over a benchmark of any kind, or over a suite of benchmarks.

    - `data` a pairwise benchmark (`demo` by default; PersonaFeedback, native, Personalized RewardBench, PRISM,
      ... any layout): each judge in each setting is a run of `tailor eval`'s judge loop;
    - `data` a multiple-choice benchmark (PrefEval's classification task, PersonaMem): each `llm:` judge's model
      answers in the benchmark's own messages and the benchmark's rule scores it (`task="pairwise"` judges its
      pair view with any judge instead; `protocol="authors"` asks as the benchmark's published scripts do,
      `scorer_version` picks PersonaMem's upstream scorer);
    - `suite` (a YAML file or a built-in name, `personalization`) instead of `data`: every benchmark x judge x
      setting it names, each step a run directory under `out`, and leaderboard.json there (`judge`, `setting`,
      `data_root` replace the file's; `skip_missing` leaves out a benchmark whose data is missing). Returns a
      `SuiteResult`.

    One judge (a `str`) in one setting: `out` is the run directory and the result is its results.json (an
    `EvalResult`, or a `ChoiceResult` for a multiple-choice benchmark). Several (a list or tuple of judges or of
    settings): a run directory per judge x setting under `out` and the merged report at `out`; the results in
    that order, as a list. `fields` are the other `EvalConfig` fields (`limit`, `seed`, `tiers`,
    `judge_options`, `data_options`, ...), `config` a base for them; `repeat` N > 1 judges each pairwise run N - 1
    more times without the call cache (`tailor eval --repeat N`)."""
    if suite is not None:
        return _eval_suite(suite, data, judge, setting, out=out, config=config, task=task, protocol=protocol,
                           scorer_version=scorer_version, repeat=repeat, data_root=data_root,
                           skip_missing=skip_missing, progress=progress, fields=fields)
    if data_root is not None or skip_missing:
        raise ConfigError("--data-root and --skip-missing apply to a suite (--suite)")
    from tailorbench.api.benchmarks import run_benchmark

    base = config if config is not None else EvalConfig()
    runs = run_benchmark(str(data) if data is not None else base.data, _specs(judge, base.judge),
                         _specs(setting, base.setting), out=out, config=config, task=task, protocol=protocol,
                         scorer_version=scorer_version, repeat=repeat, progress=progress, fields=fields)
    several = not (judge is None or isinstance(judge, str)) or not (setting is None or isinstance(setting, str))
    return runs if several else runs[0]


def _eval_suite(suite: str | Path, data: Any, judge: Any, setting: Any, *, out: str | Path,
                config: EvalConfig | None, task: str, protocol: str, scorer_version: str | None, repeat: int,
                data_root: str | Path | None, skip_missing: bool, progress: bool,
                fields: dict[str, Any]) -> SuiteResult:
    from tailorbench.api.benchmarks import run_suite_at

    if data is not None:
        raise ConfigError("a suite names its own benchmarks: give --suite or --data, not both")
    if protocol != "default" or scorer_version is not None:
        raise ConfigError("--protocol / --scorer-version: a suite's steps use the default protocol")
    taken = [name for name, given in (("--task", task != "auto"), ("--repeat", repeat != 1),
                                      ("config", config is not None)) if given]
    if taken or fields:
        raise ConfigError(f"a suite takes its options from its file; it does not take: "
                          f"{', '.join([*taken, *sorted(fields)])}")
    return run_suite_at(suite, out, data_root=data_root, judges=_specs(judge, None) or None,
                        settings=_specs(setting, None) or None, progress=progress, skip_missing=skip_missing)


async def eval_async(data: str | Path | None = None, judge: str = "longer", setting: str = "persona", *,
                     out: str | Path, config: EvalConfig | None = None, task: str = "auto", progress: bool = False,
                     **fields: Any) -> EvalResult:
    """`eval` of one judge in one setting on a pairwise benchmark as a coroutine: the judge's calls run on the
    caller's event loop (`await tb.eval_async(...)`). Any other `eval` (several judges or settings, a
    multiple-choice benchmark, a suite) is the blocking `tb.eval`, which works inside a running loop too."""
    from tailorbench.api.benchmarks import TASKS, data_task

    spec = str(data) if data is not None else (config.data if config is not None else "demo")
    if task not in TASKS:
        raise ConfigError(f"--task must be one of {', '.join(TASKS)}, got {task!r}")
    if task == "multiple-choice" or (task == "auto" and data_task(spec)[0] == "multiple-choice"):
        raise ConfigError(f"eval_async runs a pairwise benchmark on the caller's loop; {spec} is multiple choice: "
                          "call tb.eval (it works inside a running loop)")
    single = eval_config(config, {**fields, "data": spec, "judge": judge, "setting": setting})
    return EvalResult.from_run(await run_eval_async(single, Path(out), progress=progress))


def _resume_pairwise(run_dir: Path, progress: bool, max_failed: float | None) -> EvalResult:
    config = load_config(run_dir)
    if max_failed is not None:
        config.max_failed = check_max_failed(max_failed)
    return EvalResult.from_run(run_eval(config, run_dir, resume=True, progress=progress))


def _resumers() -> dict[str, tuple[str, Callable[[Path, bool, float | None], ResumedRun]]]:
    """run kind -> (the verb that makes it, how it resumes)."""
    from tailorbench.api import benchmarks, generation

    return {"pairwise": ("eval", _resume_pairwise), "multiple-choice": ("eval", benchmarks.resume_choice),
            "suite": ("eval", benchmarks.resume_suite), "gen-eval": ("gen-eval", generation.resume_gen_eval),
            "prefeval-generation": ("gen-eval", benchmarks.resume_generation)}


def _resumable_kind(run_dir: Path) -> str:
    """The kind of run `resume` continues in `run_dir` (a suite's directory is `suite`); a ConfigError saying
    what `run_dir` is when it is not a run to resume."""
    from tailorbench.benchmarks.suite import SUITE_FILE
    from tailorbench.run_kinds import run_kind

    if not run_dir.is_dir():
        what = "no such run directory" if not run_dir.exists() else "not a run directory (it is a file)"
        raise ConfigError(f"--resume {run_dir}: {what}")
    if not (run_dir / "manifest.json").is_file():
        if (run_dir / SUITE_FILE).is_file():
            return "suite"
        if (run_dir / "leaderboard.json").is_file():
            raise ConfigError(f"--resume {run_dir}: a suite's directory without {SUITE_FILE} (made before suites "
                              "recorded what they run): run the same `tailor eval --suite ...` again to finish it")
        inner = sorted(p.parent for p in run_dir.glob("*/manifest.json"))
        held = ""
        if inner:
            names = ", ".join(p.name for p in inner[:5]) + (f" and {len(inner) - 5} more" if len(inner) > 5 else "")
            held = (f"; it holds {len(inner)} runs ({names}): resume each, e.g. `tailor {resumed_by(inner[0])} "
                    f"--resume {shlex.quote(str(inner[0]))}`")
        raise ConfigError(f"--resume {run_dir}: not a run directory, manifest.json is missing{held}")
    kind = run_kind(run_dir)
    if kind not in _resumers():
        raise ConfigError(f"--resume {run_dir}: a {kind} run cannot be resumed (resume continues "
                          f"{', '.join(_resumers())} runs)")
    return kind


def resumed_by(run: str | Path) -> str:
    """The verb whose `--resume` continues a run directory (`eval` or `gen-eval`), from its kind."""
    return _resumers()[_resumable_kind(Path(run))][0]


def resume(run: str | Path, *, progress: bool = False, max_failed: float | None = None) -> ResumedRun:
    """`tailor eval --resume RUN` / `tailor gen-eval --resume RUN`: continue an interrupted run of any kind,
    keeping what was finished, and return its finished results: an `EvalResult` (a pairwise run), a
    `ChoiceResult` (multiple choice), a `GenEvalResult`, a `PrefEvalGenerationResult` or a `SuiteResult` (a suite's
    directory: the steps not finished are run). `max_failed` replaces the run's own threshold of failed verdicts
    (pairwise and gen-eval runs)."""
    run_dir = Path(run)
    return _resumers()[_resumable_kind(run_dir)][1](run_dir, progress, max_failed)


def run_failures(run_dir: str | Path, max_failed: float | None = None, what: str | None = None) -> FailureCheck:
    """Whether a run's failed verdicts (or calls) exceed `max_failed` (the run's own when None), for a run
    directory of any kind: `.exceeded` is what makes the verb exit 3, `.message()` says why."""
    from tailorbench.run_kinds import kind_of

    kind = kind_of(Path(run_dir))
    return kind.check(kind.load_results(Path(run_dir)), max_failed, what or str(run_dir))


def _run_dirs(runs: Sequence[str | Path], verb: str, folders: bool = False) -> list[Path]:
    """The run directories `report` and `compare` read, each checked (a corrupt manifest is a DataError; a
    pairwise run's, one without judge and setting too). With `folders`, a folder that is not a run directory
    stands for the runs in it (`run_kinds.runs_in`); without, such a folder is refused naming the runs it holds."""
    from tailorbench.evaluate.results import read_manifest
    from tailorbench.run_kinds import DEFAULT_KIND, describe_runs, is_run, run_kind, runs_in

    dirs: list[Path] = []
    for run in (Path(r) for r in runs):
        if not run.is_dir():
            what = "no such directory" if not run.exists() else "a file, not a run directory"
            raise ConfigError(f"{run}: {what} (pass run directories, e.g. runs/x, not the files in them)")
        if not (run / "manifest.json").is_file():
            inner = [] if is_run(run) else runs_in(run)
            if folders and inner:
                dirs += inner
                continue
            if inner:
                raise ConfigError(f"{run} is not a run directory but a folder of {describe_runs(inner)}; "
                                  f"{verb} takes run directories: name the ones to {verb}")
            raise ConfigError(f"{run} is not a run directory: manifest.json is missing"
                              + ("" if is_run(run) else " and it holds no run directory"))
        dirs.append(run)
    for run in dirs:
        if (run / "manifest.json").is_file() and run_kind(run) == DEFAULT_KIND:
            read_manifest(run)
    return dirs


def report(runs: Sequence[str | Path], out: str | Path, push: str | None = None,
           private: bool = False) -> list[ReportedRun]:
    """`tailor report RUN...`: a merged leaderboard (report.md, report.html) at `out`, laid out by the runs'
    kind (gen-eval runs side by side by the gen-eval report, multiple-choice and PrefEval generation runs by
    theirs); with `push` (OWNER/NAME), also published as a hub leaderboard (results.jsonl and the report as its
    card). A folder that is not a run directory stands for the runs in it (`tailor eval`'s folder of several
    judges or settings, a suite's folder, a study's folder); a folder of stage reports (a study's `report/`,
    `tailor stages --out`) is reported as its summary page: headline, the stage reports as links, every stage's
    headline figures and their definitions. When the runs are of several kinds, each kind's report is written to
    `out/KIND/`. Returns each run's results."""
    from tailorbench.run_kinds import RUN_KINDS, detect_kind

    if not runs:
        raise ConfigError("report needs at least one run directory")
    if push is not None:
        from tailorbench.datasets.hub_repo import check_repo_id

        check_repo_id(push)
    dirs = _run_dirs(runs, "report", folders=True)
    check_writable("--out", out, directory=True)
    by_kind: dict[str, list[Path]] = {}
    for run in dirs:
        by_kind.setdefault(detect_kind(run), []).append(run)
    for kind in by_kind:
        RUN_KINDS.get(kind)  # an unknown kind is refused before any report is written
    if len(by_kind) > 1 and push is not None:
        raise ConfigError(f"--push: the runs are of several kinds ({', '.join(sorted(by_kind))}), which share no "
                          "leaderboard; push the runs of one kind")
    if "stage" in by_kind and push is not None:
        raise ConfigError("--push: stage reports (a study's) have no leaderboard to publish")
    results: list[ReportedRun] = []
    for kind, members in by_kind.items():
        where = Path(out) if len(by_kind) == 1 else Path(out) / kind
        merged = RUN_KINDS.get(kind).merge(members, where)
        if push is not None:
            from tailorbench.datasets.hub_push import push_report

            push_report(members, where, push, private=private)
        results += _reported(members, merged)
    return results


def _reported(dirs: list[Path], merged: list[dict[str, Any]]) -> list[ReportedRun]:
    models: dict[str, type[ReportedRun]] = {"gen-eval": GenEvalResult, "multiple-choice": ChoiceResult,
                                            "prefeval-generation": PrefEvalGenerationResult,
                                            "stage": StageReportsResult}
    results: list[ReportedRun] = []
    for run, r in zip(dirs if len(dirs) == len(merged) else [None] * len(merged), merged):
        results.append(models.get(str(r.get("kind")), EvalResult).model_validate(r).located(run))
    return results


def check_compared(runs: Sequence[str | Path]) -> list[Path]:
    """The run directories `tailor compare` was given, checked before any work: a folder of runs is refused
    naming the runs it holds, fewer than two runs too."""
    dirs = _run_dirs(runs, "compare")
    if len(dirs) < 2:
        raise ConfigError("compare needs at least two run directories")
    return dirs


def compare(run_a: str | Path, run_b: str | Path, *more: str | Path, n_boot: int = 1000,
            seed: int = 0) -> CompareResult:
    """`tailor compare A B [C ...]`: each run after the first against the first, on the cases they share,
    overall and per split x tier: the paired difference with bootstrap intervals over cases and users, the exact
    McNemar test on the discordant cases, Holm-adjusted over the comparisons when there are several. The top
    level is A vs B overall (`difference`, `ci`, `p_two_sided`); `cells` its cells; `comparisons` every pair."""
    from tailorbench.evaluate.compare import compare_runs

    as_int("--n-boot", n_boot, minimum=1)
    runs = _run_dirs([run_a, run_b, *more], "compare")
    return CompareResult.model_validate(compare_runs(runs, n_boot=n_boot, seed=seed))


def registered_parts() -> str:
    """The judges and model backends that are registered (built-ins and plugins), as `tailor eval --help` shows
    them; the two registries are light modules."""
    from tailorbench.judges.base import JUDGES
    from tailorbench.models.backends import BACKENDS

    return (f"Judges: {', '.join(JUDGES.names())} (a spec is NAME or NAME:ARG, e.g. llm:openai:MODEL@URL, "
            "rm:CHECKPOINT).\n\n"
            f"Model backends: {', '.join(BACKENDS.names())}.")
