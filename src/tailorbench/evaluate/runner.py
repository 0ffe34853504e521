"""The runner: cases x setting x answer orders -> predictions.jsonl (streamed, resumable) -> results, reports.

The pair source is the planner's `plan` (its `Task`s), the row mapper `planner.to_prediction`; the judge loop itself
is `judging.judge_pairs`, which gen-eval's judging shares. The run's configuration and its validation are
`evaluate/config.py`; this module runs one configured run (or a matrix of them) and writes its manifest.
"""

from __future__ import annotations

import asyncio
import gc
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tailorbench.aio import run_sync
from tailorbench.datasets import Benchmark, load_benchmark
from tailorbench.datasets.rows import done_keys, read_appended_jsonl
from tailorbench.errors import ConfigError, TailorError
from tailorbench.evaluate.config import (
    EvalConfig,
    absolute_data,
    check_sections,
    load_config,
    read_manifest_file,
    validate_config,
)
from tailorbench.evaluate.counters import add_counts
from tailorbench.evaluate.interrupt import stop_on_sigint, take_early_interrupt
from tailorbench.evaluate.judging import Progress, judge_pairs, phase
from tailorbench.evaluate.lock import RunLock
from tailorbench.evaluate.planner import Task, orders_for, plan, sample_cases, select_cases, slug, to_prediction
from tailorbench.evaluate.report import write_run_reports
from tailorbench.evaluate.results import compute_results, parse_predictions, prediction_key
from tailorbench.evaluate.settings import SettingOptions
from tailorbench.files import check_output, ensure_dir, remove_if_unused, remove_path, write_json_atomic
from tailorbench.judges.base import (
    JudgeOptions,
    PairJudge,
    pre_work_warnings,
    split_spec_options,
)
from tailorbench.logs import get_logger
from tailorbench.options import check_writable
from tailorbench.personas import persona_attributes
from tailorbench.redact import public_options, redact, redact_obj
from tailorbench.run_kinds import RUN_KINDS
from tailorbench.schema import PairCase, RunManifest
from tailorbench.version import __version__

#: what `from tailorbench.evaluate.runner import ...` has always found here (the config and the planner now live
#: beside it)
__all__ = ["EvalConfig", "RunInterrupted", "Task", "absolute_data", "check_sections", "finalize_run",
           "library_versions", "load_config", "orders_for", "plan", "read_done", "read_lines", "run_eval",
           "run_eval_async", "run_matrix", "sample_cases", "select_cases", "slug", "to_prediction",
           "validate_config"]

log = get_logger(__name__)

PREDICTIONS = "predictions.jsonl"
MANIFEST = "manifest.json"
RESULTS = "results.json"


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C after writing every finished verdict; the message holds the resume command.
    A KeyboardInterrupt, so callers that stop on Ctrl-C stop here too (the CLI exits 130)."""


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The last line per (case, order) of predictions.jsonl (or gen-eval's verdicts.jsonl), for `--resume`: a torn
    last line (kill -9) is cut off, any other bad line stops the resume naming it."""
    rows: list[dict[str, Any]] = read_appended_jsonl(
        path, lambda p, data: parse_predictions(p, data, " (the run is left as it is)"))
    return rows


def read_done(path: Path) -> set[tuple[str, str]]:
    """(case_id, order) pairs whose last line in predictions.jsonl (or gen-eval's verdicts.jsonl) is an answer:
    what `--resume` skips. A failed call (`status: failed`) is judged again and its new line appended; an invalid
    verdict is the judge's answer and is kept (`rows.done_keys`). A torn last line (kill -9) is cut off."""
    return done_keys(read_lines(path), prediction_key)


def finalize_run(run_dir: Path, predictions: list[dict[str, Any]] | None = None,
                 cases: Sequence[PairCase] | None = None) -> dict[str, Any]:
    """Write results.json, report.md and report.html for one run (`cases`: the run's cases, for the texts of its
    example verdicts; read again from its data when not given)."""
    # an `EvalResults.to_file()`: written as the model wrote it
    results = compute_results(run_dir, predictions, None if cases is None else {c.id: c for c in cases})
    write_json_atomic(run_dir / RESULTS, results)
    write_run_reports([results], run_dir)
    return results


def library_versions() -> dict[str, str]:
    """Python's and the main libraries' versions, for a run manifest (gen-eval's too)."""
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for dist in ("pydantic", "numpy", "torch", "transformers", "openai"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def shared_rows(benchmark: Benchmark, judged: Sequence[PairCase]) -> dict[str, str]:
    """Tier overlap of the judged cases, classified against the whole benchmark (a sample keeps the class its
    case has in the full data); cases unique to their tier are left out."""
    kinds = zip(benchmark.cases, benchmark.pair_index().overlap(), strict=True)
    shared: dict[str, str] = {c.id: kind for c, kind in kinds if kind != "unique"}
    if len(judged) == len(benchmark.cases):
        return shared
    return {c.id: shared[c.id] for c in judged if c.id in shared}


def _manifest(config: EvalConfig, benchmark: Benchmark, cases: list[PairCase], judge: PairJudge) -> RunManifest:
    users: dict[str, dict[str, str]] = {}
    for case in cases:
        if case.user_id not in users:
            users[case.user_id] = persona_attributes(case.persona)
    stats = benchmark.stats()
    shared = shared_rows(benchmark, cases)
    return RunManifest(
        tailorbench_version=__version__,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        judge=redact(config.judge),
        setting=config.setting,
        data=config.data,
        dataset_fingerprint=benchmark.fingerprint(),
        seed=config.seed,
        orders=config.orders,
        config={**redact_obj(asdict(config)), "judge_options": public_options(config.judge_options),
                "judge_description": redact_obj(judge.describe())},
        versions=library_versions(),
        data_stats=stats,
        n_cases=len(cases),
        user_attributes=users,
        tier_overlap=shared,
    )


def run_eval(
    config: EvalConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    benchmark: Benchmark | None = None,
    judge: PairJudge | None = None,
) -> Path:
    """Run one judge in one setting into `out` and write results.json, report.md, report.html.

    Holds `out/run.lock` while it works (a second process on the same directory gets RunInProgressError).
    Ctrl-C: the calls in flight finish, every finished verdict is written, the manifest says `interrupted`,
    and RunInterrupted (a KeyboardInterrupt) carries the resume command. An exception from the judge (e.g.
    rejected credentials) marks the manifest `stopped` with the error, after every finished verdict is
    written, and propagates."""
    return run_sync(run_eval_async(config, out, resume=resume, progress=progress, benchmark=benchmark, judge=judge))


async def run_eval_async(
    config: EvalConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    benchmark: Benchmark | None = None,
    judge: PairJudge | None = None,
) -> Path:
    """`run_eval` as a coroutine, for a caller whose event loop is running (a notebook: `await ...`); the
    judge's calls run on that loop."""
    # The run allocates many long-lived, acyclic records (cases, inputs, prediction rows); the cyclic
    # collector would rescan them again and again (a third of the runner's time on 50k cases). Paused here.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return await _run(config, out, resume, progress, benchmark, judge)
    finally:
        if was_enabled:
            gc.enable()


async def _run(
    config: EvalConfig,
    out: Path,
    resume: bool,
    show_progress: bool,
    benchmark: Benchmark | None,
    judge: PairJudge | None,
) -> Path:
    config = validate_config(config)  # every option checked before anything is loaded or judged
    if judge is not None and config.executor != "local":
        raise ConfigError(f"--executor {config.executor} builds the judge on each worker from its spec: "
                          "pass the spec (config.judge), not a judge object")
    check_output("--out", out, directory=True, ours=is_run_dir)
    options = SettingOptions(config.persona_sections, config.setting_options)
    if benchmark is None:
        with phase(f"loading the benchmark {config.data}", show_progress):
            benchmark = load_benchmark(config.data, skip_invalid=config.skip_invalid, options=config.data_options)
    cases = select_cases(config, benchmark)
    if not cases:
        raise ConfigError("no cases left after the filters")
    check_sections(config.persona_sections, cases)
    existed = out.exists()
    try:
        ensure_dir(out)
    except OSError as exc:
        raise ConfigError(f"--out {out} cannot be created: {exc.strerror or exc}") from None
    # another run holding it: refused, and its folder left alone; the pid is written once this run is not refused
    lock = RunLock(out, record=False).acquire()
    try:
        return await _run_locked(config, out, resume, show_progress, benchmark, cases, options, judge, lock)
    except TailorError:
        lock.release()
        # a run refused before any verdict (an unknown judge, a missing extra) leaves no folder behind
        remove_if_unused(out, existed, ("run.lock", MANIFEST))
        raise
    finally:
        lock.release()


def require_probability(spec: str, judge: PairJudge) -> None:
    """`--calibration`: the judge must say how its scores make a probability (docs/metrics.md, "Reliability")."""
    from tailorbench.evaluate.reliability import PROBABILITY_RULES, judge_probability

    describe = getattr(judge, "describe", None)
    if judge_probability(describe() if describe is not None else None) is None:
        raise ConfigError(f"--calibration: judge {spec!r} yields no probability, so it has no ECE or Brier score "
                          f"(judges that do: llm: with --judge-option verdict=logprobs, rm:, embedding; rules: "
                          f"{', '.join(PROBABILITY_RULES)})")


def is_run_dir(path: Path) -> bool:
    """A directory `tailor eval` wrote (its manifest, predictions or lock): the one kind of non-empty `--out`
    a run may write into (resumed, or its predictions refused)."""
    return any((path / name).exists() for name in ("manifest.json", PREDICTIONS, "run.lock"))


async def _run_locked(
    config: EvalConfig,
    out: Path,
    resume: bool,
    show_progress: bool,
    benchmark: Benchmark,
    cases: list[PairCase],
    options: SettingOptions,
    judge: PairJudge | None,
    lock: RunLock,
) -> Path:
    """The run itself, with this process holding the directory's lock. Ctrl-C is this run's from here to the
    last file written (`stop_on_sigint`): before the first verdict it ends the run as interrupted with the resume
    command, during the verdicts it lets the calls in flight finish, and once every verdict is in it changes
    nothing (the run finishes and writes its results)."""
    stop = asyncio.Event()
    with stop_on_sigint(stop):
        return await _run_owned(config, out, resume, show_progress, benchmark, cases, options, judge, lock, stop)


async def _warn_and_prepare(judge: PairJudge, inputs: list[Any]) -> int:
    """Say what can be known before any work (truncation at the model's limit, language), prepare the judge and
    say what preparing learnt, all before the first verdict; returns how many warnings were said."""
    judge.warnings.extend(w for w in pre_work_warnings(judge, inputs) if w not in judge.warnings)
    for warning in judge.warnings:
        log.warning("%s", warning)
    early = len(judge.warnings)
    await judge.prepare(inputs)
    for warning in judge.warnings[early:]:
        log.warning("%s", warning)
    return len(judge.warnings)


async def _run_owned(
    config: EvalConfig,
    out: Path,
    resume: bool,
    show_progress: bool,
    benchmark: Benchmark,
    cases: list[PairCase],
    options: SettingOptions,
    judge: PairJudge | None,
    lock: RunLock,
    stop: asyncio.Event,
) -> Path:
    predictions = out / PREDICTIONS
    if not resume and predictions.exists() and predictions.stat().st_size:
        raise ConfigError(f"{out} already holds predictions: use --resume {out} or another --out")
    before = _previous_manifest(out) if resume else {}
    lines = read_lines(predictions) if resume else []
    done = done_keys(lines, prediction_key)
    tasks = [t for t in plan(cases, config.setting, config.orders, config.seed, options)
             if (t.case.id, t.order) not in done]
    judge = judge or run_judge(config)
    if config.calibration:
        require_probability(config.judge, judge)
    lock.record()  # not refused: from here the directory is this process's run
    if before:
        _say_resumed(out, before, len(done), len(tasks), len(lines) - len(done))
    bind = getattr(judge, "bind_run_dir", None)
    if bind is not None:
        bind(out)  # where batch mode records its provider batches (models/batch_state.py)
    manifest = _manifest(config, benchmark, cases, judge)
    manifest.config["resumed_with_done"] = len(done)
    _check_training_overlap(judge, cases, manifest)
    write_json_atomic(out / MANIFEST, manifest.to_file())
    if tasks:
        remove_path(out / RESULTS)  # an earlier process's results no longer match the predictions
    if await take_early_interrupt(stop) and tasks:  # a Ctrl-C before the first call: the run is resumable
        await judge.aclose()
        manifest.status = "interrupted"
        write_json_atomic(out / MANIFEST, manifest.to_file())
        raise RunInterrupted(_announce_interrupted(out, len(done), len(done) + len(tasks)))
    label = f"{redact(config.judge)} / {config.setting}"
    n_cases = len({t.case.id for t in tasks})
    of = "" if not n_cases else (f"{n_cases} cases x {len(tasks) // n_cases} orders" if len(tasks) % n_cases == 0
                                 else f"{n_cases} cases")  # (a resumed run may hold one order of some cases)
    bar = Progress(len(tasks), label, show_progress and bool(tasks), "verdicts", of)
    written: list[dict[str, Any]] = []
    ended: tuple[str, str | None] | None = None
    early = 0
    try:
        if tasks:
            bar.phase("preparing the judge")  # a local judge loads its model here
            early = await _warn_and_prepare(judge, [t.input for t in tasks])
            bar.phase(None)
            if not stop.is_set():
                written = await judge_pairs(judge, tasks, to_prediction, predictions, bar, stop)
    except (KeyboardInterrupt, asyncio.CancelledError):
        ended = ("interrupted", None)  # (the manifest says so below; the resume command is said here)
        _announce_interrupted(out, len(read_done(predictions)), len(done) + len(tasks))
        raise
    except Exception as exc:
        ended = ("stopped", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        bar.close()
        _record_judge(manifest, judge, before)
        await judge.aclose()
        if ended is not None:
            manifest.status, manifest.error = ended  # type: ignore[assignment]
            write_json_atomic(out / MANIFEST, manifest.to_file())
    for warning in judge.warnings[early:]:
        log.warning("%s", warning)
    manifest.config["warnings"] = list(judge.warnings)
    if len(written) < len(tasks):  # only a stop leaves tasks unjudged
        manifest.status = "interrupted"
        write_json_atomic(out / MANIFEST, manifest.to_file())
        raise RunInterrupted(_announce_interrupted(out, len(done) + len(written), len(done) + len(tasks)))
    manifest.status = "finished"
    write_json_atomic(out / MANIFEST, manifest.to_file())
    with phase(f"{label}: statistics (results.json, report)", show_progress and bool(tasks)):
        finalize_run(out, None if resume else written, cases)
    await asyncio.sleep(0)  # (a Ctrl-C's `stop.set`, handed to the loop by the handler, has run)
    if stop.is_set():
        log.info(f"interrupt: every verdict was already in; the run is finished and its results are in {out}")
    return out


def run_judge(config: EvalConfig) -> PairJudge:
    """The run's judge: built here (`--executor local`), or a pool of workers that each build it on a Ray
    cluster (`--executor ray`, evaluate/executors.py), which the judge loop drives the same way."""
    from tailorbench.evaluate.executors import build_judge

    options = JudgeOptions(seed=config.seed, batch_size=config.batch_size, extra=config.judge_options)
    return build_judge(config.judge, options, config.executor, config.ray_address, config.executor_options)


def _check_training_overlap(judge: PairJudge, cases: Sequence[PairCase], manifest: RunManifest) -> None:
    """A judge that declares its training data (`leakage.judge_content`): classify every planned case as
    in-training / persona-seen / unseen, record it in the manifest (`training_overlap`; results.json reports each
    class as its own row) and say so before any work."""
    from tailorbench.leakage import describe_overlap, judge_content, overlap

    content = judge_content(judge)
    if content is None:
        return
    block = overlap(content, cases)
    manifest.config["training_overlap"] = block
    line = describe_overlap(block, redact(judge.spec))
    if line:
        log.warning("%s", line)


def _previous_manifest(out: Path) -> dict[str, Any]:
    """The manifest an earlier process left (empty when there is none)."""
    path = out / MANIFEST
    if not path.exists():
        return {}
    return read_manifest_file(path)


def _say_resumed(out: Path, before: dict[str, Any], done: int, todo: int, failed: int) -> None:
    """Tell how the earlier process ended (this process holds the lock now, so `running` means it was
    killed) and how many failed calls are tried again before continuing."""
    status = before.get("status")
    how = {"running": "was interrupted (its process ended without finishing: killed or crashed)",
           "interrupted": "was interrupted", "stopped": f"was stopped by an error ({before.get('error')})",
           "finished": "is finished"}.get(str(status), f"has status {status!r}")
    again = f" ({failed} of them failed calls, tried again)" if failed else ""
    log.info(f"resume: {out} {how}; {done} verdicts on disk, {todo} to judge{again}")


def _record_judge(manifest: RunManifest, judge: PairJudge, before: dict[str, Any]) -> None:
    """The judge's final description, and its model's call counters added to those of earlier processes of
    this run (`call_stats`: requests, retries, errors by kind ...), so a resumed run reports all of them."""
    description = redact_obj(judge.describe())
    manifest.config["judge_description"] = description
    model = description.get("model")
    stats = model.get("stats") if isinstance(model, dict) else None
    earlier = before.get("config", {}).get("call_stats")
    if isinstance(stats, dict):
        manifest.config["call_stats"] = add_counts(earlier, stats) if isinstance(earlier, dict) else dict(stats)
    elif isinstance(earlier, dict):
        manifest.config["call_stats"] = earlier


def _announce_interrupted(out: Path, have: int, total: int) -> str:
    """Note what is on disk and the exact command that continues the run; returns that command."""
    command = f"tailor eval --resume {shlex.quote(str(out))}"
    log.warning(f"interrupted: {have} of {total} verdicts are in {out / PREDICTIONS}; resume with:\n  {command}")
    return command


def run_matrix(
    base: EvalConfig, judges: Iterable[str], settings: Iterable[str], out: Path, progress: bool = True
) -> list[Path]:
    """One run directory per judge x setting (`<judge slug>__<setting>`), then a merged report at `out`."""
    base = validate_config(base)
    check_writable("--out", out, directory=True)
    for judge in judges:
        split_spec_options(judge)  # a malformed SPEC[...] fails before the first run starts
    with phase(f"loading the benchmark {base.data}", progress):
        benchmark = load_benchmark(base.data, skip_invalid=base.skip_invalid, options=base.data_options)
    runs: list[Path] = []
    for judge in judges:
        for setting in settings:
            config = EvalConfig(**{**asdict(base), "judge": judge, "setting": setting})
            runs.append(run_eval(config, out / f"{slug(judge)}__{setting}", progress=progress, benchmark=benchmark))
    with phase(f"writing the merged report {out / 'report.md'} and report.html", progress):
        RUN_KINDS.get("pairwise").merge(runs, out)
    return runs
