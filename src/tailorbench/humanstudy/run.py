"""`tailor study run`: advance the study as far as it can go, step by step (study/plan.py), and stop where
people are needed.

Model steps call the stage verbs (`threestage.verbs`, which `tb.stages` wraps) into a temporary folder that
becomes the step's folder in one rename; annotation steps make the project, import the items (skipped when
they are already in: imports are by item id and all or nothing), open the crowd study (an existing one on the
project is reused) or issue the own annotators' login links; `collect` waits until every item has its N labels,
then exports them. A process killed anywhere repeats at most the step it was in, which had not been recorded:
its model calls come from the call cache, its database work is found done and not redone.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError, TailorError
from tailorbench.files import Output
from tailorbench.humanstudy.config import TASK_TYPE, StudyConfig, load_config
from tailorbench.humanstudy.items import database, item_ids
from tailorbench.humanstudy.plan import CONDITIONS, Step, build_steps
from tailorbench.humanstudy.state import LOCK_FILE, StudyState


class StepFailed(TailorError):
    """A model step's failed calls exceed `models.max_failed`: exit 3, the step not recorded."""

    exit_code = 3


def check_calls(step: Step, info: dict[str, Any], max_failed: float) -> None:
    """The exit-code-3 rule of the stage verbs for one model step (`failed` / `calls` of its accounting, under
    `generations` for generate)."""
    from tailorbench.failures import FailureCheck

    gen = info.get("generations")
    acc: dict[str, Any] = gen if isinstance(gen, dict) else info
    check = FailureCheck(f"study step {step.id}", int(acc.get("failed", 0)), int(acc.get("calls", 0)), max_failed,
                         unit="model calls")
    if check.exceeded:
        raise StepFailed(check.message() + " (not recorded: `tailor study run` again asks the failed calls again)")


@contextmanager
def study_lock(study_dir: Path) -> Iterator[None]:
    """One `run` at a time per study (a second is a ConfigError, not a wait). The lock file is the study's own
    state, opened for append only to hold the lock (never truncated or rewritten); a directory or an unreadable
    file in its place is exit 2 naming it."""
    lock = study_dir / LOCK_FILE
    if lock.is_dir() or (lock.exists() and not lock.is_file()):
        raise ConfigError(f"{lock}: is not a file: it is the study's lock (one `tailor study run` at a time); "
                          f"move it away")
    try:
        handle = lock.open("a")
    except OSError as exc:
        raise ConfigError(f"{lock}: the study's lock cannot be opened: {exc.strerror or exc}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{study_dir}: another `tailor study run` is working on this study") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def project_name(config: StudyConfig, step: Step) -> str:
    """The annotation project of a stage: named by the study, the stage and the annotate step's fingerprint, so
    a changed config opens a new project and never mixes labels of different items."""
    return f"{config.name}-{step.stage}-{step.fingerprint[:8]}"


class Runner:
    def __init__(self, study_dir: str | Path, config: StudyConfig, say: Callable[[str], None] | None = None) -> None:
        self.dir = Path(study_dir)
        self.config = config
        self.state = StudyState(self.dir)
        self.say = say or (lambda _m: None)
        self._db: Any = None

    @property
    def db(self) -> Any:
        if self._db is None:
            self._db = database(self.config, self.dir)
        return self._db

    def out(self, step_id: str, name: str) -> Path:
        return self.state.step_dir(step_id) / name

    # --- the steps ---------------------------------------------------------------------------------------

    def run_step(self, step: Step) -> dict[str, Any] | None:
        """Do one step; its info, or None when it waits for people (nothing recorded). The step writes into a
        fresh folder (`StudyState.making`) that takes its place only when it finished: nothing of a step that
        did not finish stays."""
        models = self.config.models
        if step.kind == "collect":
            return self.collect(step)
        with self.state.making(step.id, step.fingerprint, step.deps) as made:
            out = made.out
            if step.kind == "model":
                info = self.model_step(step, out)
                check_calls(step, info, models.max_failed)
            elif step.id == "relevance.items":
                info = self.relevance_items(out)
            elif step.kind == "annotation":
                info = self.annotate(step, out)
            elif step.kind == "analysis":
                info = self.analyse(step, out)
            else:
                info = self.report(out)
            made.info = _summary(info)
        return info

    def model_step(self, step: Step, out: Output) -> dict[str, Any]:
        """One model step through its stage verb, its outputs in `out` (the step's fresh folder); the verb's
        accounting."""
        models = self.config.models
        where, spec = {"extraction.extract": ("models.extractor", models.extractor),
                       "incorporation.generate": ("models.generator", models.generator)}.get(
            step.id, (f"models.judges.{step.judge}", step.model))
        try:
            return self.call_models(step, out)
        except ConfigError as exc:  # a key that is not set (on the first call the cache did not answer): said by
            from tailorbench.humanstudy.config import missing_key  # the study.yaml key that names the model

            missing = None if spec is None else missing_key(self.config, where, spec, self.dir / "study.yaml")
            if missing is not None and "is not set" in str(exc):
                raise ConfigError(missing) from None
            raise

    def call_models(self, step: Step, out: Output) -> dict[str, Any]:
        """`model_step`'s calls: the stage verb of the step."""
        from tailorbench.threestage import verbs

        models = self.config.models
        opts = dict(models.options)
        tmp = out.ensure()
        if step.id == "extraction.extract":
            assert self.config.inputs.conversations is not None and models.extractor is not None
            return verbs.extract(self.config.inputs.conversations, models.extractor, tmp / "items.jsonl", None, opts)
        if step.id == "incorporation.generate":
            assert models.generator is not None
            return verbs.generate(self.out("relevance.items", "items.jsonl"), models.generator, tmp,
                                  conditions=list(CONDITIONS),
                                  export=[self.out("relevance.collect", "export/ratings.jsonl")], name="generator",
                                  max_tokens=models.max_tokens, options=opts)
        assert step.model is not None
        if step.stage == "relevance":
            return verbs.judge_relevance(self.out("relevance.items", "items.jsonl"), step.model,
                                         tmp / "votes.jsonl", step.judge, opts)
        return verbs.judge_ab(self.out("incorporation.generate", "ab_tasks.jsonl"), step.model, tmp / "votes.jsonl",
                              step.judge, opts)

    def relevance_items(self, out: Output) -> dict[str, Any]:
        """Stage-2 items from stage 1's human majority (humanstudy/items.py)."""
        from tailorbench.humanstudy.items import relevance_rows

        assert self.config.inputs.prompts is not None
        rows, info = relevance_rows(self.out("extraction.extract", "items.jsonl"),
                                    self.out("extraction.collect", "export/ratings.jsonl"), self.config.inputs.prompts)
        out.write_jsonl("items.jsonl", rows)
        return {"out": str(out.path("items.jsonl")), **info}

    def annotate(self, step: Step, out: Output) -> dict[str, Any]:
        """The stage's project (made once), its items and gold (imported once), and who annotates: the crowd
        study's link, or the own annotators' login links (written to links.json, readable by the owner only)."""
        from tailorbench.annotation import service, studies
        from tailorbench.threestage import verbs

        stage, cfg = step.stage, self.config.stage(step.stage)
        assert cfg is not None
        tasks = out.path("tasks.jsonl")
        if stage == "extraction":
            verbs.export_tasks(self.out("extraction.extract", "items.jsonl"), tasks)
        elif stage == "relevance":
            verbs.export_relevance(self.out("relevance.items", "items.jsonl"), tasks)
        elif cfg.humans is None:
            out.copy_in(self.out("incorporation.generate", "ab_tasks.jsonl"), "tasks.jsonl")
        else:  # people rate the sample's tasks only (humanstudy/anchoring.py)
            from tailorbench.humanstudy.anchoring import draw_sample, write_tasks

            humans = cfg.humans
            sample = draw_sample(self.out("incorporation.generate", "ab_tasks.jsonl"), humans.share,
                                 humans.sampling, humans.seed,
                                 [self.out(d, "votes.jsonl") for d in step.deps if ".judge." in d])
            write_tasks(out, self.out("incorporation.generate", "ab_tasks.jsonl"), sample)
            self.say(f"{stage}: people rate {sample.sampled} of {sample.tasks} tasks ({sample.sampling} sample)")
        name = project_name(self.config, step)
        db = self.db
        if name not in {p["name"] for p in service.list_projects(db)}:
            service.create_project(db, name, TASK_TYPE[stage], cfg.n, cfg.instructions, cfg.gold_every)
        have = {str(r.get("id")) for r in service.items_records(db, name)}
        imported = {"items": 0, "gold_items": 0}
        for source in [tasks, *([cfg.gold] if cfg.gold is not None else [])]:
            ids = item_ids(source, stage)
            if ids and not ids <= have:  # all or nothing per file: either none of it is in, or all
                got = service.import_items(db, name, source)
                imported["items"] += got["items"]
                imported["gold_items"] += got["gold_items"]
        info: dict[str, Any] = {"project": name, "task": TASK_TYPE[stage], "imported": imported}
        if cfg.humans is not None:
            info["sample"] = {"tasks": sample.tasks, "sampled": sample.sampled, "sampling": sample.sampling}
        crowd = cfg.crowd
        base = self.config.annotation.base_url
        if crowd.kind == "prolific":
            existing = [s for s in studies.list_studies(db) if s["project"] == name]
            if existing:
                sid = existing[0]["id"]
            else:
                sid, _ = studies.create_study(db, name, crowd.quota, crowd.places, crowd.completion_code,
                                              crowd.screenout_code, crowd.screenout_gold_below, 2,
                                              crowd.time_limit_min,
                                              crowd.completion_url or studies.PROLIFIC_COMPLETION_URL,
                                              consent=crowd.consent)
            info.update(study=sid, link=studies.link(db, sid, base))
            self.say(f"{stage}: give the platform this study link: {info['link']}")
        else:
            users = {u["name"] for u in service.list_users(db)}
            links = {}
            for who in crowd.annotators:
                if who in users:
                    if not _member(db, name, who):
                        service.add_member(db, name, who)
                    token = service.rotate_link(db, who, crowd.link_days)
                else:
                    _, token = service.add_user(db, who, "annotator", [name], crowd.link_days)
                links[who] = f"{base.rstrip('/')}/login/{token}"
            # login links: readable by the owner only (made in the step's staging folder, mode 0700, and made
            # owner-only before that folder takes the step's place)
            out.write_text("links.json", json.dumps(links, indent=2) + "\n").chmod(0o600)
            info.update(annotators=sorted(links), links_file=str(self.out(step.id, "links.json")))
            self.say(f"{stage}: login links for {len(links)} annotator(s) in {info['links_file']}")
        out.write_text("project.json", json.dumps(info, indent=2) + "\n")
        return info

    def labels(self, stage: str) -> dict[str, Any]:
        from tailorbench.annotation import service

        project = self.state.info(f"{stage}.annotate")["project"]
        return dict(service.progress(self.db, project))

    def collect(self, step: Step) -> dict[str, Any] | None:
        """Export once every item has its N labels; else None (waiting), with what is missing said."""
        from tailorbench.annotation import service

        got = self.labels(step.stage)
        missing = got["labels_needed"] - got["labels_done"]
        if missing > 0:
            self.say(f"{step.stage}: waiting for people: {missing} label(s) missing "
                     f"({got['labels_done']} of {got['labels_needed']})")
            return None
        with self.state.making(step.id, step.fingerprint, step.deps) as made:
            info = service.export(self.db, got["project"], made.out.path("export"))
            # the export's items.jsonl holds the gold items too; its ratings leave them out
            info.update(out=str(self.out(step.id, "export")), regular_items=got["items"],
                        gold_items=got["gold_items"], labels=got["labels_done"])
            made.info = _summary(info)
        return info

    def analyse(self, step: Step, out: Output) -> dict[str, Any]:
        from tailorbench.threestage import verbs

        tmp = out.ensure()
        st = self.config.statistics
        export = [self.out(f"{step.stage}.collect", "export/ratings.jsonl")]
        votes = [self.out(d, "votes.jsonl") for d in step.deps if ".judge." in d]
        if step.id == "extraction.verifier":
            report = verbs.train_verifier(self.out("extraction.extract", "items.jsonl"), tmp, export=export,
                                          seed=st.seed, n_resamples=st.n_boot)
            return {"report": str(self.out(step.id, "verifier.json"))}
        if step.id == "relevance.classifier":
            report = verbs.train_relevance(self.out("relevance.items", "items.jsonl"), tmp, export=export,
                                           model=votes, seed=st.seed, n_resamples=st.n_boot)
            return {"report": str(self.out(step.id, "relevance_classifier.json"))}
        if step.stage == "extraction":
            report = verbs.extraction(self.out("extraction.extract", "items.jsonl"), export=export,
                                      n_resamples=st.n_boot, seed=st.seed, report_dir=tmp)
        elif step.stage == "relevance":
            report = verbs.relevance(model=votes, export=export, items=self.out("relevance.items", "items.jsonl"),
                                     min_shared=st.min_shared, n_resamples=st.n_boot, seed=st.seed,
                                     report_dir=tmp, epsilon=st.epsilon, min_items=st.min_items)
        else:
            report = verbs.incorporation(self.out("incorporation.generate", "ab_tasks.jsonl"), [*export, *votes],
                                         n_resamples=st.n_boot, seed=st.seed, report_dir=tmp)
            cfg = self.config.stage(step.stage)
            if cfg is not None and cfg.humans is not None:
                return {"report": str(self.out(step.id, f"{step.stage}.json")),
                        "figures": headline(step.stage, report), "anchored": self.anchored(step, out)}
        return {"report": str(self.out(step.id, f"{step.stage}.json")), "figures": headline(step.stage, report)}

    def anchored(self, step: Step, out: Output) -> dict[str, Any]:
        """Stage 3 with people on a sample: each judge's ratings anchored on people's (humanstudy/anchoring.py),
        written beside the stage report; the figures the study report shows."""
        from tailorbench.humanstudy.anchoring import (
            SAMPLE_FILE,
            anchored_estimates,
            figures,
            read_sample,
            write_estimates,
        )

        votes = {d.split(".judge.", 1)[1]: self.out(d, "votes.jsonl") for d in step.deps if ".judge." in d}
        estimates = anchored_estimates(self.out("incorporation.generate", "ab_tasks.jsonl"),
                                       self.out("incorporation.collect", "export/ratings.jsonl"), votes,
                                       read_sample(self.out("incorporation.annotate", SAMPLE_FILE)))
        write_estimates(out, estimates)
        return figures(estimates)

    def report(self, out: Output) -> dict[str, Any]:
        from tailorbench.humanstudy.report import write_study_report

        return write_study_report(self.dir, self.config, self.state, out)


def _summary(info: dict[str, Any]) -> dict[str, Any]:
    """What state.json keeps of a step's result: small values only (no report bodies)."""
    return {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool, type(None)))
            or (isinstance(v, (dict, list)) and len(json.dumps(v, default=str)) < 4000)}


def headline(stage: str, report: dict[str, Any]) -> dict[str, Any]:
    """The figures the study report shows of a stage: the human-human and human-model agreement (with CIs where
    the stage report has them) and each judge's admissibility."""
    from tailorbench.humanstudy.report import stage_figures

    return stage_figures(stage, report)


def advance(study_dir: str | Path, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every step that can run; stop at the first that waits for people. Returns what ran, what waits and
    whether the study is finished."""
    from tailorbench.humanstudy.report import report_output

    study_dir = Path(study_dir)
    config = load_config(study_dir)
    report_output(config, study_dir)  # the report place through the door, before any work
    with study_lock(study_dir):
        runner = Runner(study_dir, config, say)
        ran: list[str] = []
        waiting: dict[str, Any] | None = None
        try:
            for step in build_steps(config, study_dir, runner.state):
                if step.status == "done":
                    continue
                if any(not _is_done(runner.state, d) for d in step.deps):
                    break
                if runner.state.done(step.id, step.fingerprint, runner.state.uses(step.deps)):
                    continue  # an upstream step was made again in this run and came out the same
                if step.status == "stale":
                    runner.say(f"{step.id}: its config or inputs changed since it ran: redoing it")
                runner.say(f"{step.id}: {step.what}")
                info = runner.run_step(step)
                if info is None:
                    got = runner.labels(step.stage)
                    waiting = {"stage": step.stage, "step": step.id, "labels_done": got["labels_done"],
                               "labels_wanted": got["labels_needed"],
                               "missing": got["labels_needed"] - got["labels_done"],
                               "link": runner.state.info(f"{step.stage}.annotate").get("link")}
                    break
                ran.append(step.id)
        finally:
            if runner._db is not None:
                runner._db.dispose()
        steps = build_steps(config, study_dir)
        return {"study": config.name, "dir": str(study_dir), "ran": ran, "waiting": waiting,
                "done": [s.id for s in steps if s.status == "done"],
                "finished": all(s.status == "done" for s in steps)}


def _is_done(state: StudyState, step_id: str) -> bool:
    rec = state.steps.get(step_id)
    return rec is not None and rec.get("status") == "done"


def _member(db: Any, project: str, user: str) -> bool:
    from tailorbench.annotation import service

    got = service.progress(db, project)
    return any(a["annotator"] == user for a in got["annotators"])


def watch(study_dir: str | Path, interval_s: float = 30.0, max_wait_s: float | None = None,
          say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """`run --watch`: advance, then again every `interval_s` while people are needed, until the study is
    finished (or `max_wait_s` passed: the last result, still waiting)."""
    start = time.monotonic()
    while True:
        got = advance(study_dir, say)
        if got["finished"] or got["waiting"] is None:
            return got
        if max_wait_s is not None and time.monotonic() - start + interval_s > max_wait_s:
            return got
        time.sleep(interval_s)


__all__ = ["TailorError", "advance", "database", "watch"]
