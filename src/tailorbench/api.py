"""The Python API: every `tailor` verb has a twin here, and the CLI is a thin layer over these functions.

`import tailorbench as tb` exposes them under the verbs' names (`tb.eval`, `tb.report`, `tb.agree`, ...; see
docs/python.md). `eval`, `eval_many`, `eval_resume`, `agree`, `tiers`, `build` and `report_runs`,
`compare_runs`, `gen_eval_run` (which `tb.report`, `tb.compare`, `tb.gen_eval` name) return the pydantic models
of `api_models.py`, mirroring the JSON the verb writes; `evaluate`, `resume`, `report`, `compare`, `gen_eval`
and `gen_eval_resume` keep returning run directories and dicts, as the CLI uses them. Each verb has an
`*_async` twin to await inside a running event loop (a notebook); the blocking forms work there too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailorbench.aio import async_twin
from tailorbench.api_models import (
    AgreeResult,
    BuildResult,
    CompareResult,
    EvalResult,
    GenEvalResult,
    TiersResult,
    TrainResult,
)
from tailorbench.evaluate.runner import EvalConfig, load_config, run_eval, run_eval_async, run_matrix
from tailorbench.failures import FailureCheck
from tailorbench.geneval.config import GenEvalConfig

if TYPE_CHECKING:
    from tailorbench.construction.config import BuildConfig


def evaluate(config: EvalConfig, out: str | Path, judges: Sequence[str] | None = None,
             settings: Sequence[str] | None = None, progress: bool = False) -> list[Path]:
    """`tailor eval`: one run directory, or one per judge x setting plus a merged report at `out`."""
    judges = list(judges or [config.judge])
    settings = list(settings or [config.setting])
    out = Path(out)
    if len(judges) == 1 and len(settings) == 1:
        single = EvalConfig(**{**asdict(config), "judge": judges[0], "setting": settings[0]})
        return [run_eval(single, out, progress=progress)]
    return run_matrix(config, judges, settings, out, progress=progress)


def resume(run_dir: str | Path, progress: bool = False, max_failed: float | None = None) -> Path:
    """`tailor eval --resume RUN_DIR`: continue an interrupted run, keeping what was finished (`max_failed`:
    replace the run's own threshold of failed verdicts)."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    if max_failed is not None:
        config.max_failed = max_failed
    return run_eval(config, run_dir, resume=True, progress=progress)


def run_failures(run_dir: str | Path, max_failed: float | None = None) -> FailureCheck:
    """Whether a run's failed verdicts exceed `max_failed` (the run's own when None): `.exceeded` is what
    makes `tailor eval` exit 3, `.message()` says why."""
    from tailorbench.evaluate.results import check_run, load_results

    return check_run(load_results(Path(run_dir)), max_failed, what=str(run_dir))


def report(runs: Sequence[str | Path], out: str | Path) -> list[dict[str, Any]]:
    """`tailor report RUN...`: a merged leaderboard (report.md, report.html) at `out`; gen-eval run
    directories (manifest kind `gen-eval`) are put side by side by the gen-eval report instead."""
    from tailorbench.errors import ConfigError
    from tailorbench.evaluate.results import read_manifest
    from tailorbench.options import check_writable
    from tailorbench.run_kinds import write_merged_report

    if not runs:
        raise ConfigError("report needs at least one run directory")
    dirs = [Path(r) for r in runs]
    for run in dirs:
        if not run.is_dir():
            what = "no such directory" if not run.exists() else "a file, not a run directory"
            raise ConfigError(f"{run}: {what} (pass run directories, e.g. runs/x, not the files in them)")
        if not (run / "manifest.json").is_file():
            inner = sorted(p.parent.name for p in run.glob("*/manifest.json"))
            hint = f"; it holds runs: {', '.join(inner[:5])}" if inner else ""
            raise ConfigError(f"{run} is not a run directory: manifest.json is missing{hint}")
        read_manifest(run)  # a corrupt manifest is a DataError naming it
    check_writable("--out", out, directory=True)
    return write_merged_report(dirs, Path(out))


def gen_eval(config: GenEvalConfig, out: str | Path, progress: bool = False) -> Path:
    """`tailor gen-eval`: generate, judge against references in both orders, validate the judge, report."""
    from tailorbench.geneval.run import run_gen_eval

    return run_gen_eval(config, Path(out), progress=progress)


def gen_eval_resume(run_dir: str | Path, progress: bool = False, max_failed: float | None = None) -> Path:
    """`tailor gen-eval --resume RUN_DIR`: continue a killed gen-eval run; finished calls are not repeated."""
    from tailorbench.geneval.run import resume_gen_eval

    return resume_gen_eval(Path(run_dir), progress=progress, max_failed=max_failed)


def compare(run_a: str | Path, run_b: str | Path, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """`tailor compare`: paired bootstrap of the accuracy difference on the cases both runs share."""
    from tailorbench.evaluate.metrics import case_scores, paired_difference
    from tailorbench.evaluate.results import read_manifest, read_predictions

    scores = []
    for run in (Path(run_a), Path(run_b)):
        cs = case_scores(read_predictions(run))
        scores.append(dict(zip(cs.ids, cs.score.tolist())))
    result = paired_difference(scores[0], scores[1], n_boot=n_boot, seed=seed)
    names = [read_manifest(Path(r)) for r in (run_a, run_b)]
    return {"a": f"{names[0]['judge']} / {names[0]['setting']}",
            "b": f"{names[1]['judge']} / {names[1]['setting']}", **result}


def check_data(data: str | Path, skip_invalid: bool = False) -> dict[str, Any]:
    """`tailor data check`: integrity report of a benchmark in any layout."""
    from tailorbench.datasets import load_benchmark
    from tailorbench.datasets.check import integrity_report

    return integrity_report(load_benchmark(data, skip_invalid=skip_invalid))


def convert_data(data: str | Path, out: str | Path, skip_invalid: bool = False) -> int:
    """`tailor data convert`: any supported layout -> native PairCase JSONL."""
    from tailorbench.datasets import load_benchmark, write_native

    return write_native(load_benchmark(data, skip_invalid=skip_invalid).cases, Path(out))


def push_data(data: str | Path, repo_id: str, license: str | None, private: bool = False,
              dry_run: str | Path | None = None, skip_invalid: bool = False) -> dict[str, Any]:
    """`tailor data push`: a benchmark in any layout to the hub dataset `repo_id` as native JSONL with a dataset
    card (`license` is required); with `dry_run`, the folder is only written there."""
    from tailorbench.datasets.hub_push import push_data as _push

    return _push(data, repo_id, license, private=private, dry_run=dry_run, skip_invalid=skip_invalid)


def push_report(runs: Sequence[str | Path], out: str | Path, repo_id: str, private: bool = False) -> dict[str, Any]:
    """`tailor report --push`: the runs' results (results.jsonl) and the report at `out` (its card) to the hub
    dataset `repo_id`, in one upload; `report` must have written `out` first."""
    from tailorbench.datasets.hub_push import push_report as _push

    return _push([Path(r) for r in runs], Path(out), repo_id, private=private)


def cache_stats(path: str | Path | None = None) -> dict[str, Any]:
    """`tailor cache stats`: entries and size of the call cache, per backend / model / base URL."""
    from tailorbench.models.cache import cache_stats as _stats

    return _stats(path)


def cache_clear(path: str | Path | None = None, model: str | None = None, older_than_days: float | None = None) -> int:
    """`tailor cache clear`: delete cached calls (all, one model's, or older than N days); returns the count."""
    from tailorbench.models.cache import clear_cache

    return clear_cache(path, model=model, older_than_days=older_than_days)


# --- the verbs by their names, returning typed results ----------------------------------------------------


def _eval_config(config: EvalConfig | None, fields: dict[str, Any]) -> EvalConfig:
    base = asdict(config) if config is not None else {}
    return EvalConfig(**{**base, **fields})


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
              out: str | Path, config: EvalConfig | None = None, progress: bool = False,
              **fields: Any) -> list[EvalResult]:
    """`tailor eval -j A -j B -s S ...`: one run directory per judge x setting under `out`, plus the merged
    report at `out`; the results in that order."""
    base = _eval_config(config, {**fields, "data": data, "judge": judges[0], "setting": settings[0]})
    return [EvalResult.from_run(r) for r in evaluate(base, out, judges, settings, progress=progress)]


def eval_resume(run_dir: str | Path, progress: bool = False, max_failed: float | None = None) -> EvalResult:
    """`tailor eval --resume RUN_DIR`, returning the finished run's results."""
    return EvalResult.from_run(resume(run_dir, progress=progress, max_failed=max_failed))


def compare_runs(run_a: str | Path, run_b: str | Path, n_boot: int = 1000, seed: int = 0) -> CompareResult:
    """`tailor compare` as a typed result (`compare` returns the same object as a dict)."""
    return CompareResult.model_validate(compare(run_a, run_b, n_boot=n_boot, seed=seed))


def report_runs(runs: Sequence[str | Path], out: str | Path, push: str | None = None,
                private: bool = False) -> list[EvalResult | GenEvalResult]:
    """`tailor report RUN...` returning each run's results (`report` returns them as dicts); with `push`
    (OWNER/NAME), also published as a hub leaderboard (`push_report`)."""
    results: list[EvalResult | GenEvalResult] = []
    if push is not None:
        from tailorbench.datasets.hub_repo import check_repo_id

        check_repo_id(push)
    merged = report(runs, out)
    if push is not None:
        push_report(runs, out, push, private=private)
    for run, r in zip(runs if len(runs) == len(merged) else [None] * len(merged), merged):
        kind = GenEvalResult if r.get("kind") == "gen-eval" else EvalResult
        results.append(kind.model_validate(r).located(run))
    return results


def agree(files: Sequence[str | Path], order: Sequence[str] | None = None, positive: str | None = None,
          n_boot: int = 1000, seed: int = 0, level: float = 0.95, out: str | Path | None = None,
          fmt: str = "auto") -> AgreeResult:
    """`tailor agree`: agreement statistics of long-format ratings (.jsonl/.csv), run directories and annotation
    tools' exports (Label Studio, Argilla, Potato: detected, or all forced with `fmt`); with `out`, also written
    there as JSON (what `--out` writes)."""
    from tailorbench.agreement import AgreeOptions, agreement_report
    from tailorbench.errors import ConfigError
    from tailorbench.interop import read_ratings_any
    from tailorbench.options import as_float, as_int, check_writable

    as_int("--resamples", n_boot, minimum=1)
    as_float("--level", level, minimum=0.0, maximum=1.0, exclusive_minimum=True, exclusive_maximum=True)
    if level >= 1.0:
        raise ConfigError(f"option --level must be a number below 1, got {level!r}")
    if out is not None:
        check_writable("--out", out)
    report = agreement_report(read_ratings_any(list(files), fmt), list(order) if order else None,
                              AgreeOptions(n_boot, seed, level, positive))
    if out is not None:
        from tailorbench.files import write_json_atomic

        write_json_atomic(Path(out), report)
    return AgreeResult.model_validate(report)


def tiers(ratings: str | Path, items: str | Path, out: str | Path, easy: float = 0.75, medium: float = 0.6,
          min_ratings: int = 3, n_boot: int = 1000, seed: int = 0, fmt: str = "auto") -> TiersResult:
    """`tailor tiers`: tier pairwise annotations (long format, or a tool's export: `fmt` as in `agree`) by
    per-item agreement and write the PairCase JSONL `out`."""
    from tailorbench.agreement.tiers import TierRule, build_tiers, write_cases
    from tailorbench.errors import DataError
    from tailorbench.interop import read_ratings_any
    from tailorbench.options import as_float, as_int, check_writable

    as_float("--easy", easy, minimum=0.0, maximum=1.0)
    as_float("--medium", medium, minimum=0.0, maximum=1.0)
    rule = TierRule(easy=easy, medium=medium, min_ratings=min_ratings)
    as_int("--resamples", n_boot, minimum=1)
    check_writable("--out", out)
    cases, summary = build_tiers(items, read_ratings_any([ratings], fmt), rule, n_boot, seed)
    if not cases:
        raise DataError(Path(ratings), None, None, "no item has a tier (skipped: " + (", ".join(
            f"{n} {why}" for why, n in summary["skipped_items"].items()) or "none") + f"); {out} not written")
    write_cases(cases, out)
    return TiersResult.model_validate({**summary, "out": str(out)})


def gen_eval_run(config: GenEvalConfig, out: str | Path, progress: bool = False) -> GenEvalResult:
    """`tailor gen-eval` returning its results.json (`gen_eval` returns the run directory)."""
    return GenEvalResult.from_run(gen_eval(config, out, progress=progress))


def build(config: BuildConfig | str | Path, until: str | None = None, out: str | Path | None = None,
          model: str | None = None) -> BuildResult:
    """`tailor build run CONFIG`: the construction pipeline (finished stages reused); `out` and `model`
    override the config's. `build_problems(summary)` of `build.pipeline` says what makes the CLI exit 3."""
    from tailorbench.construction.pipeline import run_build

    return BuildResult.model_validate(run_build(_build_config(config, out, model), until=until).as_dict())


async def build_async(config: BuildConfig | str | Path, until: str | None = None, out: str | Path | None = None,
                      model: str | None = None) -> BuildResult:
    """`build` as a coroutine: the pipeline's calls run on the caller's event loop."""
    from tailorbench.construction.pipeline import run_build_async

    summary = await run_build_async(_build_config(config, out, model), until, None)
    return BuildResult.model_validate(summary.as_dict())


def _build_config(config: BuildConfig | str | Path, out: str | Path | None, model: str | None) -> BuildConfig:
    from tailorbench.construction.config import BuildConfig, load_build_config

    overrides: dict[str, str] = {}
    if out is not None:
        overrides["out"] = str(Path(out).resolve())
    if model is not None:
        overrides["model"] = model
    if isinstance(config, BuildConfig):
        return config.model_copy(update=overrides) if overrides else config
    return load_build_config(config, overrides or None)


def train_rm(config: Any = None, progress: bool = False, **overrides: Any) -> TrainResult:
    """`tailor train-rm`: train a Bradley-Terry reward model (`tailorbench.train.api.train_rm`: `config` is an
    RMTrainConfig or a YAML path, `overrides` its fields); returns OUT/summary.json. The checkpoint is the judge
    `rm:OUT` (`.judge`)."""
    from tailorbench.train.api import train_rm as run

    return TrainResult.model_validate(run(config, progress=progress, **overrides))


def view(runs: Sequence[str | Path], bundle: str | Path | None = None, host: str = "127.0.0.1", port: int = 0,
         allow_remote: bool = False, n_boot: int = 1000, seed: int = 0, serve: bool = True) -> Any:
    """`tailor view`: the viewer over run directories of every kind (`tailorbench.view.viewer.Viewer`). With
    `bundle`, written there as a static site (`.index` is its index.html); else served on loopback (any free
    port by default) in a background thread: `.url` while it runs, `.stop()` ends it (docs/view.md)."""
    from tailorbench.view.viewer import open_viewer

    return open_viewer(runs, bundle=bundle, host=host, port=port, allow_remote=allow_remote, n_boot=n_boot,
                       seed=seed, serve=serve)


# `*_async` twins of the blocking verbs (a worker thread each; eval and build run on the caller's loop above)
resume_async = async_twin(resume)
eval_many_async = async_twin(eval_many)
eval_resume_async = async_twin(eval_resume)
report_async = async_twin(report)
report_runs_async = async_twin(report_runs)
compare_async = async_twin(compare)
compare_runs_async = async_twin(compare_runs)
agree_async = async_twin(agree)
tiers_async = async_twin(tiers)
gen_eval_async = async_twin(gen_eval)
gen_eval_run_async = async_twin(gen_eval_run)
gen_eval_resume_async = async_twin(gen_eval_resume)
train_rm_async = async_twin(train_rm)
check_data_async = async_twin(check_data)
convert_data_async = async_twin(convert_data)
push_data_async = async_twin(push_data)
view_async = async_twin(view)
