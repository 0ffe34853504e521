"""The Python API: every `tailor` verb has a twin here, and the CLI is a thin layer over these functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tailorbench.evaluate.runner import EvalConfig, load_config, run_eval, run_matrix
from tailorbench.failures import FailureCheck
from tailorbench.geneval.config import GenEvalConfig


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


def cache_stats(path: str | Path | None = None) -> dict[str, Any]:
    """`tailor cache stats`: entries and size of the call cache, per backend / model / base URL."""
    from tailorbench.models.cache import cache_stats as _stats

    return _stats(path)


def cache_clear(path: str | Path | None = None, model: str | None = None, older_than_days: float | None = None) -> int:
    """`tailor cache clear`: delete cached calls (all, one model's, or older than N days); returns the count."""
    from tailorbench.models.cache import clear_cache

    return clear_cache(path, model=model, older_than_days=older_than_days)
