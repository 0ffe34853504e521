"""Python twins of `tailor study ...` (`tb.study.*`): a whole human study from one config (humanstudy/,
docs/study.md). Each verb reads STUDY_DIR/study.yaml first (a ConfigError naming the key path before any work)
and returns the pydantic model of api.results that mirrors what the CLI prints. Each works inside a running event
loop too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tailorbench.api.renamed import renamed
from tailorbench.api.results import HumanStudyInit, HumanStudyPlan, HumanStudyReport, HumanStudyRun, HumanStudyStatus
from tailorbench.errors import require_web
from tailorbench.options import as_float

Say = Callable[[str], None] | None


def init(study_dir: str | Path, force: bool = False) -> HumanStudyInit:
    """`tailor study init DIR`: the bundled example study (study.yaml and its inputs) to edit."""
    from tailorbench.humanstudy.demo import init_study

    return HumanStudyInit.model_validate(init_study(study_dir, force))


def plan(study_dir: str | Path) -> HumanStudyPlan:
    """`tailor study plan DIR`: every step with its inputs, outputs, model calls and estimated cost (writes
    nothing)."""
    from tailorbench.humanstudy.config import load_config, missing_key, model_specs
    from tailorbench.humanstudy.plan import study_plan
    from tailorbench.logs import get_logger

    config = load_config(study_dir)
    got = HumanStudyPlan.model_validate(study_plan(config, study_dir))
    if any(s["kind"] == "model" and s["status"] != "done" for s in got.steps):
        for where, spec in model_specs(config):  # what `study run` would stop on, said before it runs
            missing = missing_key(config, where, spec, Path(study_dir) / "study.yaml")
            if missing is not None:
                get_logger(__name__).warning("%s", missing)
    return got


def run(study_dir: str | Path, watch: bool = False, interval_s: float = 30.0, max_wait_s: float | None = None,
        say: Say = None) -> HumanStudyRun:
    """`tailor study run DIR [--watch]`: advance as far as the study can go; with `watch`, again every
    `interval_s` while people are needed (until finished, or `max_wait_s`)."""
    require_web("tailorbench.api.study.run (the annotation database)")
    from tailorbench.humanstudy.config import load_config
    from tailorbench.humanstudy.run import advance
    from tailorbench.humanstudy.run import watch as watch_study

    as_float("--interval", interval_s, minimum=0.0, exclusive_minimum=True)
    if max_wait_s is not None:
        as_float("--max-wait", max_wait_s, minimum=0.0)
    load_config(study_dir)  # the config's errors before anything else
    got = watch_study(study_dir, interval_s, max_wait_s, say) if watch else advance(study_dir, say)
    return HumanStudyRun.model_validate(got)


def status(study_dir: str | Path) -> HumanStudyStatus:
    """`tailor study status DIR`: per stage the step, labels done / wanted, annotator quality, open places."""
    require_web("tailorbench.api.study.status (the annotation database)")
    from tailorbench.humanstudy.status import study_status

    return HumanStudyStatus.model_validate(study_status(study_dir))


def report(study_dir: str | Path) -> HumanStudyReport:
    """`tailor study report DIR`: the study report, once every stage is analysed (a ConfigError saying which
    step is not done otherwise)."""
    from tailorbench.errors import ConfigError
    from tailorbench.files import load_json
    from tailorbench.humanstudy.config import load_config
    from tailorbench.humanstudy.plan import build_steps

    config = load_config(study_dir)
    steps = build_steps(config, study_dir)
    if any(s.status != "done" for s in steps if s.id != "report"):
        left = [s.id for s in steps if s.status != "done" and s.id != "report"]
        raise ConfigError(f"{study_dir}: the study is not finished ({', '.join(left[:3])} ... not done): "
                          "`tailor study run` first")
    if steps[-1].status != "done":
        run(study_dir)
    place = Path(study_dir) / config.report.dir  # a relative folder inside the study (humanstudy.config)
    body = load_json(place / "study.json", dict, "a study report")
    return HumanStudyReport.model_validate({"study": body["study"], "out": str(place), "stages": body["stages"]})


def demo(study_dir: str | Path, seed: int = 0, say: Say = None) -> HumanStudyRun:
    """`tailor study demo DIR`: the bundled example end to end on SQLite with the illustrative model and
    simulated participants (illustrative figures, labelled so)."""
    require_web("tailorbench.api.study.demo (the annotation server)", server=True)
    from tailorbench.humanstudy.demo import run_demo

    return HumanStudyRun.model_validate(run_demo(study_dir, seed, say))


#: the verbs (their `*_async` twins are gone: each only ran the verb in a worker thread)
_VERBS = ("init", "plan", "run", "status", "report", "demo")

__all__ = ["demo", "init", "plan", "report", "run", "status"]

if not TYPE_CHECKING:
    __getattr__ = renamed(__name__, {}, twins=_VERBS)
