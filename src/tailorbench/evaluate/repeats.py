"""`tailor eval --repeat N`: the same run judged N times, the call cache neither read nor written for the extra
repeats, and what that says about the judge's determinism (docs/metrics.md, "Determinism"): the share of
verdicts (case x order) identical in every repeat, and the accuracy of each repeat and their spread.

The first repeat is the run itself; repeats 2..N are full run directories under `RUN/repeats/K` (resumable like
any run, their own predictions and reports). `RUN/determinism.json` holds the figures; results.json carries them
as `determinism` and the report says when a judge sampled at temperature 0 still gave different verdicts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.evaluate.results import DETERMINISM, read_manifest, read_predictions
from tailorbench.files import write_json_atomic


@contextlib.contextmanager
def cache_off() -> Iterator[None]:
    """Models built inside neither read nor write the call cache (the policy every model reads on creation)."""
    before = os.environ.get("TAILORBENCH_CACHE_POLICY")
    os.environ["TAILORBENCH_CACHE_POLICY"] = "off"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TAILORBENCH_CACHE_POLICY", None)
        else:
            os.environ["TAILORBENCH_CACHE_POLICY"] = before


def repeat_dirs(run_dir: Path, n: int) -> list[Path]:
    return [run_dir, *(run_dir / "repeats" / str(k) for k in range(2, n + 1))]


def check_repeat(n: int, executor: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"--repeat must be an integer >= 1, got {n!r}")
    if n > 1 and executor != "local":
        raise ConfigError("--repeat runs its repeats in this process: use it with --executor local")


def _verdict_map(predictions: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], tuple[str, Any]]:
    return {(str(r["case_id"]), str(r["order"])): (str(r["status"]), r.get("choice")) for r in predictions}


def _accuracy(predictions: Sequence[Mapping[str, Any]]) -> float | None:
    """Case-weighted accuracy: each case's mean correctness over its verdicts, averaged (the metrics' rule)."""
    per_case: dict[str, list[float]] = {}
    for r in predictions:
        per_case.setdefault(str(r["case_id"]), []).append(float(bool(r.get("correct"))))
    return float(np.mean([np.mean(v) for v in per_case.values()])) if per_case else None


def determinism(runs: Sequence[Sequence[Mapping[str, Any]]], temperature: float | None) -> dict[str, Any]:
    """The figures of `runs` (each a repeat's predictions): verdicts present in every repeat, the share identical
    (same status and choice) in all, the accuracy of each repeat and their spread."""
    maps = [_verdict_map(p) for p in runs]
    shared = set(maps[0]).intersection(*maps[1:]) if maps else set()
    same = sum(1 for key in shared if len({m[key] for m in maps}) == 1)
    accuracies = [_accuracy(p) for p in runs]
    known = [a for a in accuracies if a is not None]
    agreement = same / len(shared) if shared else None
    out: dict[str, Any] = {
        "repeats": len(runs),
        "verdicts_compared": len(shared),
        "verdicts_identical": same,
        "agreement": agreement,
        "accuracy": accuracies,
        "accuracy_spread": (max(known) - min(known)) if known else None,
        "accuracy_sd": float(np.std(known, ddof=1)) if len(known) > 1 else None,
        "temperature": temperature,
    }
    if temperature == 0 and agreement is not None and agreement < 1:
        out["note"] = (f"at temperature 0, {len(shared) - same} of {len(shared)} verdicts differ between the "
                       f"{len(runs)} repeats: the judge is not deterministic (server batching, sampling backends)")
    return out


def judge_temperature(description: Any) -> float | None:
    """The sampling temperature a judge's description records (None: a judge without one)."""
    params = description.get("params") if isinstance(description, Mapping) else None
    value = params.get("temperature") if isinstance(params, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


def run_repeats(config: Any, run_dir: Path, n: int, progress: bool = False) -> dict[str, Any]:
    """Repeats 2..`n` of the finished run `run_dir` (its EvalConfig `config`), each with the cache off, then
    determinism.json and the run's results and reports rewritten with it. Returns the figures."""
    from tailorbench.evaluate.runner import finalize_run, run_eval

    check_repeat(n, config.executor)
    dirs = repeat_dirs(run_dir, n)
    options = dict(config.judge_options)
    if "cache_policy" in options:
        options["cache_policy"] = "off"
    for out in dirs[1:]:
        with cache_off():
            run_eval(replace(config, judge_options=options), out, resume=(out / "manifest.json").is_file(),
                     progress=progress)
    manifest = read_manifest(run_dir)
    temperature = judge_temperature((manifest.get("config") or {}).get("judge_description"))
    figures = {**determinism([read_predictions(d) for d in dirs], temperature),
               "runs": [str(d.relative_to(run_dir)) or "." for d in dirs]}
    write_json_atomic(run_dir / DETERMINISM, figures)
    finalize_run(run_dir)
    return figures
