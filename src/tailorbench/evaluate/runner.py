"""The runner: cases x setting x answer orders -> predictions.jsonl (streamed, resumable) -> results, reports.

`plan` and `to_prediction` are pure functions of their inputs, so a shard of cases can be judged anywhere
and the predictions concatenated. Only the runner decides which answer is A and which is B.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import orjson

from tailorbench import __version__
from tailorbench.datasets import Benchmark, filter_cases, load_benchmark
from tailorbench.errors import ConfigError
from tailorbench.evaluate.settings import SettingOptions, get_setting, prepare_setting
from tailorbench.files import write_json_atomic
from tailorbench.judges.base import JudgeOptions, PairJudge, make_judge
from tailorbench.personas import cjk_share, persona_attributes
from tailorbench.schema import JudgeInput, Order, PairCase, RunManifest, Verdict

PREDICTIONS = "predictions.jsonl"
MANIFEST = "manifest.json"


@dataclass
class EvalConfig:
    """Everything that decides a run's predictions; stored in manifest.json so `--resume` can continue it."""

    data: str = "demo"
    judge: str = "longer"
    setting: str = "persona"
    orders: Literal["both", "random"] = "both"
    seed: int = 0
    splits: list[str] | None = None
    tiers: list[str] | None = None
    #: a seeded sample of this many cases (source order kept), after the split/tier filters
    limit: int | None = None
    persona_sections: list[str] | None = None
    skip_invalid: bool = False
    ci_unit: Literal["case", "user"] = "case"
    n_boot: int = 1000
    judge_options: dict[str, Any] = field(default_factory=dict)
    setting_options: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None


@dataclass(frozen=True)
class Task:
    case: PairCase
    order: Order
    input: JudgeInput
    #: prediction fields shared by the case's orders (computed once per case)
    fields: dict[str, Any]


def slug(text: str) -> str:
    """Directory-safe name of a judge spec: `:`, `/`, `@` and spaces become `_`."""
    out = text
    for char in ":/@ ":
        out = out.replace(char, "_")
    return out


def orders_for(case: PairCase, orders: str, seed: int) -> tuple[Order, ...]:
    """`both`: AB and BA. `random`: one order per case from a hash of (seed, case id), so it is stable
    under sharding and resume."""
    if orders == "both":
        return ("AB", "BA")
    bit = hashlib.blake2b(f"{seed}\x1f{case.id}".encode(), digest_size=1).digest()[0] & 1
    return ("AB",) if bit else ("BA",)


def plan(
    cases: Sequence[PairCase], setting: str, orders: str, seed: int, options: SettingOptions
) -> list[Task]:
    """Every (case, order) to judge, with the JudgeInput the judge will see."""
    build = prepare_setting(setting, cases, options)
    # a user's profile is usually the same in every case: render it once (checked by equality)
    rendered: dict[str, tuple[dict[str, Any], str | None]] = {}
    tasks: list[Task] = []
    for case in cases:
        hit = rendered.get(case.user_id) if setting == "persona" else None
        if hit is not None and (hit[0] is case.persona or hit[0] == case.persona):
            context = hit[1]
        else:
            context = build(case, options)
            rendered[case.user_id] = (case.persona, context)
        language = "zh" if cjk_share(case.question[:200]) > 0.3 else "en"
        fields = _case_fields(case)
        for order in orders_for(case, orders, seed):
            a, b = (case.chosen, case.rejected) if order == "AB" else (case.rejected, case.chosen)
            tasks.append(
                Task(
                    case,
                    order,
                    JudgeInput(
                        case_id=case.id,
                        setting=setting,
                        question=case.question,
                        answer_a=a,
                        answer_b=b,
                        context=context,
                        persona=case.persona if setting == "persona" else None,
                        language=language,
                    ),
                    fields,
                )
            )
    return tasks


def _case_fields(case: PairCase) -> dict[str, Any]:
    """The part of a prediction line that is the same in every order of a case."""
    return {"case_id": case.id, "split": case.split, "tier": case.tier, "user_id": case.user_id,
            "len_chosen": len(case.chosen), "len_rejected": len(case.rejected)}


def to_prediction(task: Task, verdict: Verdict, judge: str) -> dict[str, Any]:
    """Score one verdict: correct iff the judge picked the position that holds `chosen`. Returns a
    `schema.Prediction` as a plain dict (the hot path; the tests validate every line against the model)."""
    ok = verdict.status == "ok" and verdict.choice is not None
    usage = verdict.usage
    return {
        **task.fields,
        "judge": judge,
        "setting": task.input.setting,
        "order": task.order,
        "choice": verdict.choice if ok else None,
        "correct": ok and verdict.choice == ("A" if task.order == "AB" else "B"),
        "status": verdict.status if verdict.status != "ok" or ok else "invalid",
        "scores": verdict.scores,
        "raw": verdict.raw,
        "error": verdict.error,
        "latency_s": verdict.latency_s,
        "prompt_tokens": usage.prompt_tokens if usage else 0,
        "completion_tokens": usage.completion_tokens if usage else 0,
        "cost_usd": usage.cost_usd if usage else None,
        "truncated": verdict.truncated,
        "cached": verdict.cached,
    }


def sample_cases(cases: list[PairCase], limit: int | None, seed: int) -> list[PairCase]:
    if limit is None or limit >= len(cases):
        return cases
    if limit < 1:
        raise ConfigError("--limit must be at least 1")
    keep = set(random.Random(seed).sample(range(len(cases)), limit))
    return [c for k, c in enumerate(cases) if k in keep]


def select_cases(config: EvalConfig, benchmark: Benchmark) -> list[PairCase]:
    cases = filter_cases(benchmark.cases, config.splits, config.tiers)
    return sample_cases(cases, config.limit, config.seed)


def read_done(path: Path) -> set[tuple[str, str]]:
    """(case_id, order) pairs already in predictions.jsonl. A torn last line (kill -9) is cut off."""
    done: set[tuple[str, str]] = set()
    if not path.exists():
        return done
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end != len(data):
        with path.open("r+b") as handle:
            handle.truncate(end)
    for line in data[:end].splitlines():
        if line.strip():
            row = orjson.loads(line)
            done.add((row["case_id"], row["order"]))
    return done


def _versions() -> dict[str, str]:
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
        judge=config.judge,
        setting=config.setting,
        data=config.data,
        dataset_fingerprint=benchmark.fingerprint(),
        seed=config.seed,
        orders=config.orders,
        config={**asdict(config), "judge_description": judge.describe()},
        versions=_versions(),
        data_stats=stats,
        n_cases=len(cases),
        user_attributes=users,
        tier_overlap=shared,
    )


class Progress:
    """A progress bar on stderr with a rate and an ETA (silent when disabled). The bar counts units (verdicts);
    the rate is shown per `rate_unit`, `per_unit` units making one (2 verdicts per case with both orders)."""

    def __init__(self, total: int, label: str, enabled: bool, rate_unit: str = "items", per_unit: float = 1.0
                 ) -> None:
        self.enabled = enabled
        self.per_unit = per_unit
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(f"{{task.fields[rate]}} {rate_unit}/s"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._bar.add_task(label, total=total, rate="-")
        self._bar.start()

    def advance(self, n: int) -> None:
        if self.enabled:
            task = self._bar.tasks[self._task]
            speed = task.speed
            self._bar.update(self._task, advance=n, rate=f"{speed / self.per_unit:,.1f}" if speed else "-")

    def close(self) -> None:
        if self.enabled:
            self._bar.stop()


async def _judge_all(
    judge: PairJudge, tasks: list[Task], out: Path, progress: Progress, max_inflight: int = 4
) -> list[dict[str, Any]]:
    """Feed the judge batch by batch, keeping a few batches in flight; write each batch as it lands.
    Returns the prediction rows written."""
    written: list[dict[str, Any]] = []
    size = max(1, judge.batch_size)
    batches = [tasks[i : i + size] for i in range(0, len(tasks), size)]
    with out.open("ab") as handle:

        async def one(batch: list[Task]) -> tuple[list[Task], list[Verdict]]:
            return batch, await judge.judge([t.input for t in batch])

        pending: set[asyncio.Task[tuple[list[Task], list[Verdict]]]] = set()
        queue = iter(batches)
        for batch in queue:
            pending.add(asyncio.ensure_future(one(batch)))
            if len(pending) >= max_inflight:
                break
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for fut in finished:
                batch, verdicts = fut.result()
                if len(verdicts) != len(batch):
                    raise RuntimeError(f"judge {judge.spec} returned {len(verdicts)} verdicts for {len(batch)}")
                rows = [to_prediction(t, v, judge.spec) for t, v in zip(batch, verdicts)]
                handle.write(b"".join(orjson.dumps(row) + b"\n" for row in rows))
                written.extend(rows)
                handle.flush()
                progress.advance(len(batch))
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(asyncio.ensure_future(one(nxt)))
    return written


def run_eval(
    config: EvalConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    benchmark: Benchmark | None = None,
    judge: PairJudge | None = None,
) -> Path:
    """Run one judge in one setting into `out` and write results.json, report.md, report.html."""
    # The run allocates many long-lived, acyclic records (cases, inputs, prediction rows); the cyclic
    # collector would rescan them again and again (a third of the runner's time on 50k cases). Paused here.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return asyncio.run(_run(config, out, resume, progress, benchmark, judge))
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
    from tailorbench.evaluate.results import finalize_run

    options = SettingOptions(config.persona_sections, config.setting_options)
    get_setting(config.setting)  # fail on an unknown setting before loading anything
    benchmark = benchmark or load_benchmark(config.data, skip_invalid=config.skip_invalid)
    cases = select_cases(config, benchmark)
    if not cases:
        raise ConfigError("no cases left after the filters")
    predictions = out / PREDICTIONS
    if not resume and predictions.exists() and predictions.stat().st_size:
        raise ConfigError(f"{out} already holds predictions: use --resume {out} or another --out")
    out.mkdir(parents=True, exist_ok=True)
    done = read_done(predictions) if resume else set()
    tasks = [t for t in plan(cases, config.setting, config.orders, config.seed, options)
             if (t.case.id, t.order) not in done]
    judge = judge or make_judge(
        config.judge, JudgeOptions(seed=config.seed, batch_size=config.batch_size, extra=config.judge_options)
    )
    manifest = _manifest(config, benchmark, cases, judge)
    manifest.config["resumed_with_done"] = len(done)
    write_json_atomic(out / MANIFEST, manifest.model_dump())
    per_case = len(tasks) / max(1, len({t.case.id for t in tasks}))
    bar = Progress(len(tasks), f"{config.judge} / {config.setting}", show_progress and bool(tasks), "cases", per_case)
    written: list[dict[str, Any]] = []
    try:
        if tasks:
            await judge.prepare([t.input for t in tasks])
            written = await _judge_all(judge, tasks, predictions, bar)
    except (KeyboardInterrupt, asyncio.CancelledError):
        manifest.status = "interrupted"
        write_json_atomic(out / MANIFEST, manifest.model_dump())
        raise
    finally:
        bar.close()
        manifest.config["judge_description"] = judge.describe()
        await judge.aclose()
    for warning in judge.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    manifest.status = "finished"
    manifest.config["warnings"] = list(judge.warnings)
    write_json_atomic(out / MANIFEST, manifest.model_dump())
    finalize_run(out, None if done else written)
    return out


def load_config(run_dir: Path) -> EvalConfig:
    """The EvalConfig a run was started with (for --resume)."""
    manifest = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    known = EvalConfig.__dataclass_fields__
    return EvalConfig(**{k: v for k, v in manifest["config"].items() if k in known})


def run_matrix(
    base: EvalConfig, judges: Iterable[str], settings: Iterable[str], out: Path, progress: bool = True
) -> list[Path]:
    """One run directory per judge x setting (`<judge slug>__<setting>`), then a merged report at `out`."""
    from tailorbench.evaluate.report import write_merged_report

    benchmark = load_benchmark(base.data, skip_invalid=base.skip_invalid)
    runs: list[Path] = []
    for judge in judges:
        for setting in settings:
            config = EvalConfig(**{**asdict(base), "judge": judge, "setting": setting})
            runs.append(run_eval(config, out / f"{slug(judge)}__{setting}", progress=progress, benchmark=benchmark))
    write_merged_report(runs, out)
    return runs
