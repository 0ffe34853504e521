"""`tailor gen-eval`: sample -> generate (model under test, reference) -> judge in both orders -> validate the
judge -> results.json, report.md, report.html. Every step appends to its file in the run directory and skips
what is already there, so a killed run resumes (`--resume RUN_DIR`); every model call goes through the call
cache, so a re-run makes no call at all."""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, NamedTuple

import orjson
from pydantic import Field

from tailorbench.aio import run_sync
from tailorbench.datasets import Benchmark, filter_cases, load_benchmark
from tailorbench.datasets.rows import done_keys
from tailorbench.errors import ConfigError, DataError
from tailorbench.evaluate.executors import build_judge, check_executor, generator_options
from tailorbench.evaluate.interrupt import stop_on_sigint
from tailorbench.evaluate.judging import Progress, judge_pairs
from tailorbench.evaluate.lock import RunLock
from tailorbench.evaluate.runner import RunInterrupted, library_versions, read_done
from tailorbench.evaluate.settings import SettingOptions, get_setting, prepare_setting
from tailorbench.failures import check_max_failed
from tailorbench.files import appending, ensure_dir, write_json_atomic
from tailorbench.geneval.config import CHOSEN, GenEvalConfig, batch_targets
from tailorbench.geneval.generate import (
    GENERATIONS,
    MODEL,
    REFERENCE,
    VERDICTS,
    PhraseCache,
    chosen_rows,
    generate,
    generation_key,
    language_of,
    read_rows,
)
from tailorbench.geneval.report import write_reports
from tailorbench.geneval.results import RESULTS, compute_results
from tailorbench.geneval.sampling import stratified_sample
from tailorbench.geneval.validation import VALIDATION, validate_judge
from tailorbench.judges.base import JudgeOptions, PairJudge, pre_work_warnings
from tailorbench.logs import get_logger
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import GenParams
from tailorbench.options import as_float, as_int, check_writable
from tailorbench.redact import public_options, redact, redact_obj
from tailorbench.schema import ORDERS, JudgeInput, Order, PairCase, RunManifest, Verdict, check_fields
from tailorbench.version import __version__

log = get_logger(__name__)

KIND = "gen-eval"
MANIFEST = "manifest.json"


def is_gen_eval_dir(path: Path) -> bool:
    """A directory `tailor gen-eval` wrote (its manifest or generations): the one kind of non-empty `--out` it
    resumes into."""
    return (path / MANIFEST).is_file() or (path / GENERATIONS).is_file()


def select_cases(config: GenEvalConfig, benchmark: Benchmark) -> list[PairCase]:
    cases = filter_cases(benchmark.cases, config.splits, config.tiers, benchmark)
    return stratified_sample(cases, config.per_tier, config.seed)


def load_config(run_dir: Path) -> GenEvalConfig:
    """The configuration a gen-eval run was started with (for --resume)."""
    path = run_dir / MANIFEST
    if not path.exists():
        raise ConfigError(f"{run_dir} is not a run directory: manifest.json is missing")
    from tailorbench.files import load_json

    manifest = load_json(path, dict, "a run manifest (a JSON object)")
    if manifest.get("kind") != KIND:
        raise ConfigError(f"{run_dir} is not a gen-eval run (kind {manifest.get('kind', 'pairwise')!r})")
    # each field of the run log's model it holds of its type (older gen-eval manifests may lack the later
    # fields), and what resume reads present: a manifest of another run relabelled is an error naming the file
    check_fields(GenEvalManifest, path, None, manifest, "gen-eval run manifest")
    for key in ("model", "reference", "config"):
        if key not in manifest:
            raise DataError(path, None, key, "missing: not a gen-eval run manifest")
    known = GenEvalConfig.__dataclass_fields__
    return GenEvalConfig(**{k: v for k, v in manifest["config"].items() if k in known})


class GenEvalManifest(RunManifest):
    """manifest.json of a gen-eval run: a `RunManifest` (always both orders) with the kind, the two answer
    sources, the judge's setting, the sample's cells and the warnings of the work. `--resume` reads only `kind`
    and `config`, `tailor report` the keys above, so a manifest written before this model still resumes."""

    kind: Literal["gen-eval"] = "gen-eval"
    model: str
    reference: str
    judge_setting: str
    cases_per_split_tier: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


def _manifest(config: GenEvalConfig, benchmark: Benchmark, cases: list[PairCase]) -> GenEvalManifest:
    return GenEvalManifest(
        tailorbench_version=__version__,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        model=redact(config.model),
        reference=redact(config.reference),
        judge=redact(config.judge),
        setting=config.setting,
        judge_setting=config.judge_setting,
        data=config.data,
        dataset_fingerprint=benchmark.fingerprint(),
        seed=config.seed,
        orders="both",
        config={**redact_obj(asdict(config)), "model_options": public_options(config.model_options),
                "judge_options": public_options(config.judge_options)},
        versions=library_versions(),
        data_stats=benchmark.stats(),
        n_cases=len(cases),
        cases_per_split_tier=_cell_counts(cases),
    )


def _cell_counts(cases: list[PairCase]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for case in cases:
        key = f"{case.split}/{case.tier}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _gen_params(config: GenEvalConfig) -> GenParams:
    return GenParams(temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed)


def _check(config: GenEvalConfig, out: Path) -> None:
    """Every option typed and in range, and `out` writable, before any data is loaded or a call made (a
    ConfigError naming the option); the models' backend options are checked by building the models (nothing
    is loaded or connected until a call)."""
    if not config.model:
        raise ConfigError("--model is required: the model under test, e.g. openai:MODEL@http://host/v1")
    get_setting(config.setting)
    get_setting(config.judge_setting)
    check_max_failed(as_float("--max-failed", config.max_failed, minimum=0.0, maximum=1.0))
    as_int("--seed", config.seed)
    if config.per_tier is not None:
        as_int("--per-tier", config.per_tier, minimum=1)
    as_int("--n-boot", config.n_boot, minimum=1)
    as_float("--temperature", config.temperature, minimum=0.0)
    as_int("--max-tokens", config.max_tokens, minimum=1)
    if config.batch_size is not None:
        as_int("--batch-size", config.batch_size, minimum=1)
    as_int("--validate-cases", config.validate_cases, minimum=0)
    if config.setting_options.get("top_k") is not None:
        as_int("--top-k", config.setting_options["top_k"], minimum=1)
    check_writable("--out", out, directory=True, ours=is_gen_eval_dir)
    check_executor(config.executor, config.ray_address, config.executor_options)
    if config.batch and not batch_targets(config):
        raise ConfigError(f"--batch: no model of this run has a batch API (the model {config.model!r}, the judge "
                          f"{config.judge!r}); batch mode works with openai: and anthropic: models")
    for spec in (config.model, *([] if config.reference == CHOSEN else [config.reference])):
        make_chat_model(spec, config.model_extra(spec))


def run_gen_eval(config: GenEvalConfig, out: Path, *, resume: bool = False, progress: bool = True) -> Path:
    """Run every step into `out` (or continue it with `resume`) and write results and reports."""
    _check(config, out)
    # built first, so a bad judge option is an error before any generation; closed after its verdicts
    judge = build_judge(
        config.judge, JudgeOptions(seed=config.seed, batch_size=config.batch_size, extra=config.judge_extra()),
        config.executor, config.ray_address, config.executor_options)
    try:
        return _run_checked(config, out, resume, progress, judge)
    finally:
        run_sync(judge.aclose())


def _run_checked(config: GenEvalConfig, out: Path, resume: bool, progress: bool, judge: PairJudge) -> Path:
    benchmark = load_benchmark(config.data, skip_invalid=config.skip_invalid)
    cases = select_cases(config, benchmark)
    if not cases:
        raise ConfigError("no cases left after the filters")
    ensure_dir(out)
    with RunLock(out, record=False) as lock:  # one process per run directory (see evaluate/lock.py)
        if not resume and (out / GENERATIONS).exists() and (out / GENERATIONS).stat().st_size:
            raise ConfigError(f"{out} already holds generations: use --resume {out} or another --out")
        lock.record()  # not refused: the run.lock of a refused run stays as the last real holder wrote it
        manifest = _manifest(config, benchmark, cases)
        write_json_atomic(out / MANIFEST, manifest.model_dump())
        notes: list[str] = []
        try:
            notes += run_sync(_generate_and_judge(config, cases, out, progress, judge))
            validation = validate_judge(config, out, progress=progress)
            write_json_atomic(out / VALIDATION, validation)
        except (KeyboardInterrupt, asyncio.CancelledError):
            manifest.status = "interrupted"
            write_json_atomic(out / MANIFEST, manifest.model_dump())
            log.warning(f"interrupted: what is written stays in {out}; resume with:\n  {_resume_command(out)}")
            raise
        except Exception as exc:  # e.g. rejected credentials: what is written stays, the manifest says why
            manifest.status, manifest.error = "stopped", f"{type(exc).__name__}: {exc}"
            write_json_atomic(out / MANIFEST, manifest.model_dump())
            raise
        manifest.status = "finished"
        manifest.warnings = notes
        write_json_atomic(out / MANIFEST, manifest.model_dump())
        results = finalize(out)
    for warning in results["warnings"]:
        log.warning("%s", warning)
    return out


def finalize(run_dir: Path) -> dict[str, Any]:
    """Write results.json, report.md and report.html of one gen-eval run."""
    results = compute_results(run_dir)
    write_json_atomic(run_dir / RESULTS, results)
    write_reports([results], run_dir)
    return results


def resume_gen_eval(run_dir: Path, progress: bool = True, max_failed: float | None = None) -> Path:
    """Continue a gen-eval run (`max_failed`: replace the run's own threshold of failed calls)."""
    config = load_config(run_dir)
    if max_failed is not None:
        config.max_failed = max_failed
    return run_gen_eval(config, run_dir, resume=True, progress=progress)


async def _generate_and_judge(config: GenEvalConfig, cases: list[PairCase], out: Path, progress: bool,
                              judge: PairJudge) -> list[str]:
    options = SettingOptions(config.persona_sections, config.setting_options)
    phrases = PhraseCache()
    path = out / GENERATIONS
    done = done_keys(read_rows(path, generation_key), generation_key)  # a failed generation is asked again
    notes: list[str] = []
    roles = [(MODEL, config.model)]
    if config.reference == CHOSEN:
        missing = [c for c in cases if (c.id, REFERENCE) not in done]
        if missing:
            with appending(path) as handle:
                handle.write(b"".join(orjson.dumps(r) + b"\n" for r in chosen_rows(missing, phrases)))
    else:
        roles.append((REFERENCE, config.reference))
    context = prepare_setting(config.setting, cases, options)
    batch = config.batch_size or 64
    for role, spec in roles:
        todo = [c for c in cases if (c.id, role) not in done]
        if not todo:
            continue
        model = make_chat_model(spec, generator_options(spec, config.model_extra(spec), config.executor,
                                                        config.ray_address, config.executor_options))
        bind = getattr(model, "bind_run_dir", None)
        if bind is not None:
            bind(out)  # batch mode records its provider batches here (models/batch_state.py)
        bar = Progress(len(todo), f"generate {role}: {spec}", progress, "generations")
        # a model that batches more at once (vllm:) gets its own window: a Ray Data engine starts once per window;
        # in batch mode every call is handed over at once (the provider's batches are the window)
        own = getattr(model, "batch_size", None)
        window = config.batch_size or max(batch, own if isinstance(own, int) else 0)
        if getattr(model, "batcher", None) is not None:
            window = len(todo)
        try:
            await generate(model, role, todo, context, options, _gen_params(config), path, phrases, window,
                           on_batch=bar.advance)
        finally:
            bar.close()
            await model.aclose()
    notes += await _judge(config, cases, out, options, progress, judge)
    return notes


def _resume_command(out: Path) -> str:
    return f"tailor gen-eval --resume {shlex.quote(str(out))}"


class GenTask(NamedTuple):
    """One verdict to ask for: a case, the order its two answers are shown in, and what the judge sees."""

    case: PairCase
    order: Order
    input: JudgeInput


def judge_tasks(
    cases: list[PairCase], generations: list[dict[str, Any]], setting: str, options: SettingOptions
) -> list[GenTask]:
    """gen-eval's pair source: both orders of every case whose generated and reference answers both exist.
    Order `AB` shows the generated answer as A, `BA` shows it as B (the judge never knows which is which)."""
    answers = {(r["case_id"], r["role"]): r for r in generations}
    judged = [c for c in cases
              if answers.get((c.id, MODEL), {}).get("status") == "ok"
              and answers.get((c.id, REFERENCE), {}).get("status") == "ok"]
    context = prepare_setting(setting, judged, options)
    tasks = []
    for case in judged:
        gen, ref = answers[(case.id, MODEL)]["answer"], answers[(case.id, REFERENCE)]["answer"]
        ctx = context(case, options)
        for order in ORDERS:
            a, b = (gen, ref) if order == "AB" else (ref, gen)
            tasks.append(GenTask(case, order, JudgeInput(
                case_id=case.id, setting=setting, question=case.question, answer_a=a, answer_b=b, context=ctx,
                persona=case.persona if setting == "persona" else None, language=language_of(case))))
    return tasks


def verdict_row(task: GenTask, verdict: Verdict, judge: str) -> dict[str, Any]:
    """gen-eval's row mapper, one line of verdicts.jsonl: which answer the judge picked (`generated` /
    `reference` / None)."""
    case, order, item = task
    ok = verdict.status == "ok" and verdict.choice is not None
    gen_position = "A" if order == "AB" else "B"
    usage = verdict.usage
    gen, ref = (item.answer_a, item.answer_b) if order == "AB" else (item.answer_b, item.answer_a)
    return {
        "case_id": case.id, "judge": judge, "order": order, "split": case.split, "tier": case.tier,
        "user_id": case.user_id,
        "choice": verdict.choice if ok else None,
        "winner": (("generated" if verdict.choice == gen_position else "reference") if ok else None),
        "status": verdict.status if verdict.status != "ok" or ok else "invalid",
        "len_generated": len(gen), "len_reference": len(ref),
        "scores": verdict.scores, "raw": verdict.raw, "error": verdict.error, "latency_s": verdict.latency_s,
        "prompt_tokens": usage.prompt_tokens if usage else 0,
        "completion_tokens": usage.completion_tokens if usage else 0,
        "cost_usd": usage.cost_usd if usage else None,
        "truncated": verdict.truncated, "cached": verdict.cached,
    }


async def _judge(
    config: GenEvalConfig, cases: list[PairCase], out: Path, options: SettingOptions, progress: bool,
    judge: PairJudge,
) -> list[str]:
    """Judge every (case, order) not yet in verdicts.jsonl through the one judge loop (`judging.judge_pairs`):
    verdict by verdict for a streaming judge, else a few batches in flight, each line flushed as it lands. The
    first Ctrl-C lets the calls in flight finish and ends with RunInterrupted (the resume command)."""
    path = out / VERDICTS
    done = read_done(path)
    judge_options = SettingOptions(config.persona_sections, config.setting_options)
    generations = read_rows(out / GENERATIONS, generation_key)
    tasks = [t for t in judge_tasks(cases, generations, config.judge_setting, judge_options)
             if (t.case.id, t.order) not in done]
    if not tasks:
        return []
    bar = Progress(len(tasks), f"judge: {config.judge}", progress, "verdicts")
    stop = asyncio.Event()
    bind = getattr(judge, "bind_run_dir", None)
    if bind is not None:
        bind(out)  # where batch mode records the judge's provider batches (models/batch_state.py)
    try:
        inputs = [t.input for t in tasks]
        early = pre_work_warnings(judge, inputs)  # known before any verdict (truncation, language): said first
        judge.warnings.extend(early)
        for warning in judge.warnings:
            log.warning("%s", warning)
        with stop_on_sigint(stop):
            await judge.prepare(inputs)
            written = [] if stop.is_set() else await judge_pairs(judge, tasks, verdict_row, path, bar, stop)
    finally:
        bar.close()
        await judge.aclose()
    if len(written) < len(tasks):  # only a stop leaves tasks unjudged
        command = _resume_command(out)
        have, total = len(done) + len(written), len(done) + len(tasks)
        log.warning(f"interrupted: {have} of {total} verdicts are in {path}; resume with:\n  {command}")
        raise RunInterrupted(command)
    return list(judge.warnings)
