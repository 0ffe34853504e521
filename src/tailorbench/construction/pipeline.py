"""The driver of `tailor build`: it runs the stages, profile -> questions -> answers (`calls.py`) -> pairs ->
export (`pairs.py`), over a shared context (`context.py`), and sums up the run. Each stage writes
`<out>/<stage>.jsonl` (its records) and `<out>/stages/<stage>.json` (fingerprint, counters, failures) when it
finishes.

A stage is reused when its checkpoint's fingerprint matches: a hash of everything that decides its output (its
part of the config, its template source, the model, the fingerprint of the stage before it, and for `profile`
the memory file's bytes). A changed template re-runs that stage and the ones after it; the call cache still
serves every request it has seen, so a re-run costs zero calls. Items that fail after all retries are recorded
in the checkpoint (`failures`) and counted, never silently dropped; later stages work on what succeeded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tailorbench.aio import run_sync
from tailorbench.construction import STAGES
from tailorbench.construction.calls import load_personas, stage_answers, stage_profile, stage_questions
from tailorbench.construction.config import BuildConfig, SplitNames, load_build_config
from tailorbench.construction.context import (
    CALL_STAGES,
    BuildContext,
    StageReport,
    fingerprint_of,
    model_options,
    read_records,
)
from tailorbench.construction.pairs import export, make_pairs
from tailorbench.construction.structured import StageStats
from tailorbench.errors import ConfigError
from tailorbench.failures import FailureCheck, first_causes
from tailorbench.files import ensure_dir, write_json_atomic, write_jsonl_atomic
from tailorbench.logs import get_logger
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import ChatModel
from tailorbench.options import check_writable
from tailorbench.version import __version__

notes_log = get_logger(__name__)


def stage_fingerprints(ctx: BuildContext) -> dict[str, str]:
    """Chained fingerprints: each stage's inputs plus the fingerprint of the stage before it."""
    c = ctx.config
    common = (c.model, c.model_options, c.structured_output, c.generation.model_dump(), c.retries)
    if c.memory is not None:
        source = hashlib.sha256(c.memory.read_bytes()).hexdigest() if c.memory.is_file() else None
        fp_profile = fingerprint_of("profile", common, source, c.users, c.profile.model_dump(),
                                    ctx.template("profile")[1])
    else:  # personas taken as they are: only the data and the users chosen matter
        fp_profile = fingerprint_of("profile", "personas",
                                    fingerprint_of(sorted(load_personas(str(c.personas)).items())), c.users)
    fp: dict[str, str] = {"profile": fp_profile}
    fp["questions"] = fingerprint_of(fp["profile"], common, c.seed, c.questions.model_dump(), c.general_pool(),
                            *([c.splits.model_dump()] if c.splits != SplitNames() else []),
                            ctx.template("questions")[1])
    fp["answers"] = fingerprint_of(fp["questions"], common, c.seed, c.answers.model_dump(), c.pairs.rules,
                          ctx.template("answer")[1])
    fp["pairs"] = fingerprint_of(fp["answers"], c.pairs.model_dump())
    fp["export"] = fingerprint_of(fp["pairs"], c.name, c.annotation.model_dump(), __version__)
    return fp


@dataclass
class BuildSummary:
    out: Path
    stages: list[StageReport]
    model: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "stages": [{"name": s.name, "status": s.status, "fingerprint": s.fingerprint, "records": s.records,
                        "failures": len(s.failures), **s.stats} for s in self.stages],
            "model": self.model,
        }


def _load_checkpoint(out: Path, name: str, fingerprint: str) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    state, records = out / "stages" / f"{name}.json", out / f"{name}.jsonl"
    if not state.is_file() or not records.is_file():
        return None
    from tailorbench.files import load_json

    meta: dict[str, Any] = load_json(state, dict, "a build stage's checkpoint (a JSON object)")
    if meta.get("fingerprint") != fingerprint:
        return None
    return read_records(records), meta


async def run_build_async(config: BuildConfig, until: str | None = None, log: Callable[[str], None] | None = None,
                          model: ChatModel | None = None) -> BuildSummary:
    """Run the stages up to `until` (inclusive), reusing every finished stage whose fingerprint matches."""
    if until is not None and until not in STAGES:
        from tailorbench.registry import did_you_mean

        raise ConfigError(f"unknown stage {until!r}{did_you_mean(until, STAGES)}; stages: {', '.join(STAGES)}")
    say = log or notes_log.info
    ctx = BuildContext(config, model)
    out = config.out
    check_writable("out", out, directory=True)  # before any work, like every option below
    if model is None:
        make_chat_model(config.model, model_options(config))  # options typed and in range (opens nothing)
    ensure_dir(out / "stages")
    fps = stage_fingerprints(ctx)
    data: dict[str, list[dict[str, Any]]] = {}
    reports: list[StageReport] = []
    last = STAGES.index(until) if until else len(STAGES) - 1
    try:
        for name in STAGES[: last + 1]:
            hit = _load_checkpoint(out, name, fps[name])
            if hit is not None:
                records, meta = hit
                data[name] = records
                reports.append(StageReport(name, "reused", fps[name], len(records), meta["stats"], meta["failures"]))
                say(f"{name}: reused {len(records)} records ({out / name}.jsonl)")
                continue
            stats = StageStats()
            failures: list[dict[str, Any]] = []
            if name == "profile":
                records, failures = await stage_profile(ctx, stats)
            elif name == "questions":
                records, failures = await stage_questions(ctx, stats, data["profile"])
            elif name == "answers":
                records, failures = await stage_answers(ctx, stats, data["profile"], data["questions"])
            elif name == "pairs":
                records, failures = make_pairs(config, stats, data["questions"], data["answers"])
            else:
                records = export(config, stats, data["profile"], data["pairs"])
            data[name] = records
            write_jsonl_atomic(out / f"{name}.jsonl", records)
            write_json_atomic(out / "stages" / f"{name}.json", {
                "stage": name, "fingerprint": fps[name], "finished_at": datetime.now(timezone.utc).isoformat(
                    timespec="seconds"), "stats": stats.as_dict(), "failures": failures})
            reports.append(StageReport(name, "ran", fps[name], len(records), stats.as_dict(), failures))
            lost = f", {stats.gave_up} gave up after retries" if stats.gave_up else ""
            say(f"{name}: {len(records)} records, {stats.attempts} model attempts{lost} -> {out / name}.jsonl")
    finally:
        if ctx.model is not None and model is None:
            await ctx.model.aclose()
    summary = BuildSummary(out, reports, ctx.model.describe() if ctx.model is not None else None)
    write_json_atomic(out / "summary.json", summary.as_dict())
    return summary


def build_problems(summary: BuildSummary, max_failed: float = 0.0) -> list[str]:
    """Why a build counts as failed (exit code 3 of `tailor build run`), each with its first causes: the first
    stage that produced nothing (the later ones then produce nothing either), and every model stage that gave up
    on more items than `max_failed` allows (on all of them, always). Empty when the build is sound."""
    problems: list[str] = []
    for stage in summary.stages:
        causes = first_causes(f["errors"][-1] for f in stage.failures if f.get("errors"))
        if not stage.stats.get("ok", stage.records):
            why = f"; first causes: {' | '.join(causes)}" if causes else ""
            problems.append(f"stage {stage.name} produced nothing ({stage.stats.get('items', 0)} items){why}")
            break
        if stage.name in CALL_STAGES:
            check = FailureCheck(f"stage {stage.name}", int(stage.stats.get("gave_up", 0)),
                                 int(stage.stats.get("items", 0)), max_failed, causes, unit="items",
                                 outcome="given up after every retry")
            if check.exceeded:
                problems.append(check.message())
    return problems


def run_build(config: BuildConfig | str | Path, until: str | None = None,
              log: Callable[[str], None] | None = None) -> BuildSummary:
    """Python twin of `tailor build run CONFIG.yaml [--until STAGE]`."""
    if not isinstance(config, BuildConfig):
        config = load_build_config(config)
    return run_sync(run_build_async(config, until, log))
