"""The steps of a study, in the order `run` takes them, each with its inputs, outputs, fingerprint and (for model
steps) its call count and estimated cost; `plan` prints them and writes nothing.

Per stage: the model steps (stage 1: `extract`; stage 2: the stage-2 items from stage 1's human majority, then
`judge.NAME` per judge; stage 3: `generate`, then `judge.NAME`), `annotate` (project, import, crowd study or
login links), `collect` (waits for the labels, then exports them) and `analyse` (the stage report); then
`report`. A model step's call count is exact once its inputs can be known (the extractor's at once; the others
once the labels they are built from are all in, read from the export or the annotation database) and `null`
before, said so in `calls_known`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.files import scratch
from tailorbench.humanstudy.config import NEEDS, TASK_TYPE, StudyConfig
from tailorbench.humanstudy.state import StudyState, fingerprint

#: the max_tokens each stage verb asks for (threestage: extract 512, yes/no and 1..5 judges 8)
EXTRACT_MAX_TOKENS = 512
JUDGE_MAX_TOKENS = 8
#: tokens a prompt template adds around the item's own text (an estimate for the cost)
TEMPLATE_TOKENS = 150
#: what stage 3 generates: the gold attributes of the stage-2 human majority, and none (the template's control)
CONDITIONS = ("gold", "none")


@dataclass
class Step:
    id: str
    stage: str
    kind: str  # model | data | annotation | collect | analysis | report
    what: str
    deps: list[str]
    config: dict[str, Any]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    model: str | None = None
    judge: str | None = None
    fingerprint: str = ""
    status: str = "pending"  # done | pending | stale (done before with another fingerprint)
    calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    #: an annotate step of a stage with people on a sample (`humans`): the tasks, those people rate and the
    #: labels wanted (tasks x n); None until the tasks exist
    people: dict[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "config"}
        out["calls_known"] = self.kind != "model" or self.calls is not None
        return out


def _stage_slice(config: StudyConfig, stage: str) -> dict[str, Any]:
    """What an annotation step depends on: the stage's settings less what only costs money."""
    cfg = config.stage(stage)
    assert cfg is not None
    data = cfg.model_dump(mode="json")
    data["crowd"] = {k: v for k, v in data["crowd"].items() if k not in ("reward", "currency")}
    if data.get("humans") is None:  # a stage without a sample keeps the fingerprint it had before `humans` existed
        data.pop("humans", None)
    return {**data, "task": TASK_TYPE[stage], "name": config.name}


def build_steps(config: StudyConfig, study_dir: str | Path, state: StudyState | None = None) -> list[Step]:
    """Every step of the study with its fingerprint and status against STUDY_DIR/state.json (nothing written,
    except that a finished step a killed run did not record is adopted into `state`)."""
    state = state or StudyState(study_dir, readonly=True)
    models = config.models
    opts = dict(models.options)
    steps: list[Step] = []

    def add(step: Step) -> None:
        by_id = {s.id: s for s in steps}
        step.fingerprint = fingerprint(step.config, step.inputs, [by_id[d].fingerprint for d in step.deps])
        rec = state.steps.get(step.id)
        upstream_ok = all(by_id[d].status == "done" for d in step.deps)
        if upstream_ok and state.done(step.id, step.fingerprint, state.uses(step.deps)):
            step.status = "done"
        elif rec is not None:
            step.status = "stale"
        steps.append(step)

    for stage in config.run_stages():
        cfg = config.stage(stage)
        assert cfg is not None
        model_steps: list[str] = []
        if stage == "extraction":
            assert config.inputs.conversations is not None
            add(Step("extraction.extract", stage, "model", "the extractor lists each user's attributes", [],
                     {"model": models.extractor, "options": opts}, [str(config.inputs.conversations)],
                     ["items.jsonl"], model=models.extractor))
            source = "extraction.extract"
            model_steps.append(source)
        elif stage == "relevance":
            need = NEEDS[stage]
            assert config.inputs.prompts is not None
            add(Step("relevance.items", stage, "data", "stage-2 items: each user's prompts with the attributes "
                     "stage 1's human majority accepted", [f"{need}.extract", f"{need}.collect"], {},
                     [str(config.inputs.prompts)], ["items.jsonl"]))
            source = "relevance.items"
        else:
            add(Step("incorporation.generate", stage, "model", "generic and personalized answers (gold attributes "
                     "of stage 2's human majority, and none) -> A/B tasks", ["relevance.items", "relevance.collect"],
                     {"model": models.generator, "options": opts, "max_tokens": models.max_tokens,
                      "conditions": list(CONDITIONS)}, [], ["ab_tasks.jsonl"], model=models.generator))
            source = "incorporation.generate"
            model_steps.append(source)
        if cfg.judges and stage != "extraction":
            for name, spec in models.judges.items():
                sid = f"{stage}.judge.{name}"
                add(Step(sid, stage, "model", f"judge {name} votes on every item", [source],
                         {"model": spec, "options": opts, "name": name}, [], ["votes.jsonl"], model=spec, judge=name))
                model_steps.append(sid)
        gold = [str(cfg.gold)] if cfg.gold is not None else []
        if cfg.gold is not None:  # read as `run` will import it: a bad gold file stops the plan, naming its line
            from tailorbench.humanstudy.items import item_ids

            item_ids(cfg.gold, stage)
        annotate_deps, annotate_out = [source], ["tasks.jsonl", "project.json"]
        if cfg.humans is not None:  # people rate a sample of the tasks; an active one reads the judges' ratings
            annotate_out.append("sample.json")
            if cfg.humans.sampling == "active":
                annotate_deps += [s for s in model_steps if ".judge." in s]
        add(Step(f"{stage}.annotate", stage, "annotation", f"project, import and crowd for task {TASK_TYPE[stage]}"
                 + (f" (people rate {cfg.humans.share:g} of the tasks, {cfg.humans.sampling} sample)"
                    if cfg.humans is not None else ""),
                 annotate_deps, _stage_slice(config, stage), gold, annotate_out))
        add(Step(f"{stage}.collect", stage, "collect", "wait for the labels, then export them",
                 [f"{stage}.annotate"], {}, [], ["export/ratings.jsonl"]))
        analysis = config.statistics.model_dump(mode="json")
        what = f"the {stage} report"
        if cfg.humans is not None:
            analysis["humans"] = cfg.humans.model_dump(mode="json")
            what += " and the judges' ratings anchored on people's"
        add(Step(f"{stage}.analyse", stage, "analysis", what, [f"{stage}.collect", *model_steps], analysis, [],
                 [f"{stage}.json"]))
    report_deps = [f"{s}.analyse" for s in config.run_stages()]
    if config.report.interventions:
        fit = config.statistics.model_dump(mode="json")
        if config.stage("extraction") is not None:
            add(Step("extraction.verifier", "extraction", "analysis", "the verifier trained on stage 1's labels, "
                     "judged on held-out users", ["extraction.extract", "extraction.collect"], fit, [],
                     ["verifier.json"]))
            report_deps.append("extraction.verifier")
        if config.stage("relevance") is not None:
            judges = [s.id for s in steps if s.stage == "relevance" and s.judge is not None]
            add(Step("relevance.classifier", "relevance", "analysis", "the relevance classifier trained on stage "
                     "2's labels, judged on held-out users", ["relevance.items", "relevance.collect", *judges], fit,
                     [], ["relevance_classifier.json"]))
            report_deps.append("relevance.classifier")
    add(Step("report", "report", "report", "the study report", report_deps,
             {"dir": str(config.report.dir), "illustrative": config.report.illustrative}, [],
             ["study.json", "study.md"]))
    with scratch("tailor-study-plan-") as folder:
        sources = Sources(config, Path(study_dir), state, {s.id: s for s in steps}, folder)
        try:
            for step in steps:
                if step.kind == "model":
                    _count(step, sources, config)
                elif step.kind == "annotation":
                    _people(step, sources, config)
        finally:
            sources.close()
    return steps


def _lines(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSONL file, read by the stage verbs' reader (a bad line: a DataError naming it)."""
    from tailorbench.threestage.recentering_formats import jsonl

    return [rec for _, rec in jsonl(path)]


class Sources:
    """Where plan finds a model step's inputs: the finished steps' files, else what they would hold once the
    labels they read are all in (the stage's labels from the annotation database, the stage-2 items built from
    them, the stage-3 tasks generation would plan), in a scratch folder outside the study."""

    def __init__(self, config: StudyConfig, study_dir: Path, state: StudyState, steps: dict[str, Step],
                 scratch: Path) -> None:
        self.config, self.dir, self.state, self.steps, self.scratch = config, study_dir, state, steps, scratch
        self._db: Any = None

    def close(self) -> None:
        if self._db is not None:
            self._db.dispose()

    def done(self, step_id: str) -> bool:
        step = self.steps.get(step_id)
        return step is not None and step.status == "done"

    def export(self, stage: str) -> Path | None:
        """The stage's exported ratings, or the same from the database once every label is in."""
        if self.done(f"{stage}.collect"):
            return self.state.step_dir(f"{stage}.collect") / "export" / "ratings.jsonl"
        if not self.done(f"{stage}.annotate"):
            return None
        from tailorbench.humanstudy.items import database, labels_from_database

        if self._db is None:
            self._db = database(self.config, self.dir, readonly=True)
        return labels_from_database(self._db, self.state.info(f"{stage}.annotate")["project"],
                                    self.scratch / f"{stage}-ratings.jsonl")

    def relevance_items(self) -> Path | None:
        if self.done("relevance.items"):
            return self.state.step_dir("relevance.items") / "items.jsonl"
        export = self.export("extraction") if self.done("extraction.extract") else None
        if export is None or self.config.inputs.prompts is None:
            return None
        from tailorbench.files import write_jsonl_atomic
        from tailorbench.humanstudy.items import relevance_rows

        rows, _ = relevance_rows(self.state.step_dir("extraction.extract") / "items.jsonl", export,
                                 self.config.inputs.prompts)
        out = self.scratch / "relevance-items.jsonl"
        write_jsonl_atomic(out, rows)
        return out

    def generation_plan(self) -> list[Any] | None:
        """Stage 3's planned tasks (generation.plan: pure), from the stage-2 items and labels."""
        items = self.relevance_items()
        export = self.export("relevance") if items is not None else None
        if items is None or export is None:
            return None
        from tailorbench.threestage.incorporation.generation import plan
        from tailorbench.threestage.recentering_formats import read_relevance_items
        from tailorbench.threestage.relevance.analysis import human_gold
        from tailorbench.threestage.verbs import stage2_ratings

        gold = human_gold(stage2_ratings((), (), [export], items)[0])
        tasks, _ = plan(read_relevance_items(items), list(CONDITIONS), gold, None)
        return tasks


def _count(step: Step, sources: Sources, config: StudyConfig) -> None:
    """The step's model calls and token estimate from its inputs, when they exist (else left None)."""
    prompts: list[str] = []
    out_tokens = JUDGE_MAX_TOKENS
    if step.id == "extraction.extract":
        from tailorbench.threestage.extraction.extract import read_conversations, user_turns

        assert config.inputs.conversations is not None
        prompts = ["\n".join(user_turns(convs)) for _, convs, _ in read_conversations(config.inputs.conversations)]
        out_tokens = EXTRACT_MAX_TOKENS
    elif step.id.startswith("relevance.judge."):
        items = sources.relevance_items()
        if items is None:
            return
        prompts = [f"{r['prompt']}\n{a}" for r in _lines(items) for a in r["attributes"]]
    elif step.judge is not None and sources.done("incorporation.generate"):
        tasks_file = sources.state.step_dir("incorporation.generate") / "ab_tasks.jsonl"
        prompts = [f"{r['prompt']}\n{r['generic']}\n{r['personalized']}\n{a}" for r in _lines(tasks_file)
                   for a in r["attributes"]]
    else:
        tasks = sources.generation_plan()
        if tasks is None:
            return
        if step.id == "incorporation.generate":
            prompts, out_tokens = generation_requests(tasks), config.models.max_tokens
        else:  # the A/B judge: one call per rated attribute of every task (every generation succeeding)
            answer = "x" * 4 * config.models.max_tokens
            prompts = [f"{t.item.prompt}\n{answer}\n{answer}\n{a}" for t in tasks for a in t.rated]
    step.calls = len(prompts)
    step.input_tokens = sum(len(p) // 4 + TEMPLATE_TOKENS for p in prompts)
    step.output_tokens = out_tokens * len(prompts)
    step.cost_usd = _cost(step.model, step.input_tokens, step.output_tokens)


def _people(step: Step, sources: Sources, config: StudyConfig) -> None:
    """The tasks people will rate in a stage with `humans`: the sample `run` draws (the same seeded draw, from the
    generated tasks, and for an active sample the judges' ratings), once those are made."""
    cfg = config.stage(step.stage)
    if cfg is None or cfg.humans is None:
        return
    from tailorbench.humanstudy.anchoring import draw_sample, draw_tasks

    if all(sources.done(d) for d in step.deps):
        tasks = sources.state.step_dir("incorporation.generate") / "ab_tasks.jsonl"
        votes = [sources.state.step_dir(d) / "votes.jsonl" for d in step.deps if ".judge." in d]
        sample = draw_sample(tasks, cfg.humans.share, cfg.humans.sampling, cfg.humans.seed, votes)
    elif cfg.humans.sampling != "active" and not sources.done("incorporation.generate"):
        planned = sources.generation_plan()  # the tasks generation will write (every generation succeeding)
        if planned is None:
            return
        sample = draw_tasks([t.task_id for t in planned], [t.condition for t in planned], cfg.humans.share,
                            cfg.humans.sampling, cfg.humans.seed)
    else:  # an active sample waits for the judges' ratings
        return
    step.people = {"tasks": sample.tasks, "sampled": sample.sampled, "sampling": sample.sampling,
                   "labels_wanted": sample.sampled * cfg.n}


def _cost(spec: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """Estimated USD from the price table (None for a model it does not list: local models, unknown names)."""
    if spec is None:
        return None
    from tailorbench.models.backends import parse_model_spec
    from tailorbench.models.pricing import PriceTable

    return PriceTable.load().cost(parse_model_spec(spec).model, input_tokens, output_tokens)


def generation_requests(tasks: list[Any]) -> list[str]:
    """The distinct generation requests of stage 3's planned tasks, as `generate` sends them: one generic answer
    per prompt, one personalized answer per distinct attribute set given."""
    keys: dict[tuple[str, str, tuple[str, ...]], str] = {}
    for t in tasks:
        keys.setdefault(("generic", t.item.prompt, ()), t.item.prompt)
        keys.setdefault(("personalized", t.item.prompt, tuple(t.given)), t.item.prompt + "\n" + "\n".join(t.given))
    return list(keys.values())


def crowd_cost(config: StudyConfig) -> dict[str, Any]:
    """Per stage: places x reward (Prolific) in its currency; own annotators cost nothing here."""
    out: dict[str, Any] = {}
    for stage in config.run_stages():
        cfg = config.stage(stage)
        assert cfg is not None
        crowd = cfg.crowd
        if crowd.kind == "prolific":
            out[stage] = {"places": crowd.places, "reward": crowd.reward, "currency": crowd.currency,
                          "cost": round(crowd.places * crowd.reward, 2)}
        else:
            out[stage] = {"annotators": len(crowd.annotators), "cost": 0.0}
    return out


def study_plan(config: StudyConfig, study_dir: str | Path) -> dict[str, Any]:
    """The plan: every step (status, inputs, outputs, calls, tokens, cost), the stale steps and the totals."""
    steps = build_steps(config, study_dir)
    model = [s for s in steps if s.kind == "model"]
    known = [s.cost_usd for s in model if s.cost_usd is not None]
    return {
        "study": config.name,
        "steps": [s.row() for s in steps],
        "stale": [s.id for s in steps if s.status == "stale"],
        "model_calls": sum(s.calls or 0 for s in model),
        "model_calls_known": all(s.calls is not None for s in model),
        "estimated_cost_usd": round(sum(known), 6) if known else None,
        "crowd_cost": crowd_cost(config),
    }
