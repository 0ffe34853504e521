"""Stage 3 with people on a sample (`stages.incorporation.humans`): which A/B tasks people rate, and the
human-anchored estimate of what people would say of every task, the judges' ratings standing in for people's
(prediction-powered inference, `estimate/`; docs/estimate.md and docs/metrics.md, "Human-anchored estimates").

People rate whole tasks (one prompt, the generic and the personalized answer, every attribute of the task), so a
task is what the sample draws, with the design's inclusion probability (`estimate.sampling.draw`,
`estimate.sample_plan.plan_entries`; the strata of a stratified sample are the tasks' conditions, gold and none).
The estimate's unit is the task too: a task's value is the sum of its rated attributes' values times T / I (T
tasks, I rated attributes), so the mean over tasks is exactly the mean over attributes that the stage report
gives (`humans.per_item_mean`), and the interval is about independent draws of tasks, as the design made them.
An attribute's value is, for people, the mean of their ratings (`mean_rating`) or whether that mean is <= 0
(`share_no_better`: the personalized answer no better than the generic one), for a judge its own rating or
whether it is <= 0. Only the attributes the judge rated count (a failed call leaves one out, said in a note).

`run` draws the sample in the annotate step (which imports only the drawn tasks and writes `sample.json`), and
the analyse step writes one estimate per judge and measure (`anchored.JUDGE.MEASURE.json`, the
`EstimateReport` that `tailor estimate --out` writes, and `anchored.md`); `plan` draws the same sample to count
the tasks people will see.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tailorbench.estimation.records import EstimateReport
from tailorbench.files import Output, load_json

__all__ = ["MEASURES", "SAMPLE_FILE", "HumanSample", "anchored_estimates", "draw_sample", "draw_tasks", "estimate_file",
           "figures", "read_sample", "write_estimates", "write_tasks"]

#: the annotate step's record of the sample
SAMPLE_FILE = "sample.json"
#: what the analyse step estimates, per judge
MEASURES: dict[str, str] = {
    "share_no_better": "share of rated attributes whose personalized answer people find no better than the "
                       "generic one (mean rating <= 0), per task",
    "mean_rating": "mean rating people give the personalized answer against the generic one (-2..2), per task",
}


class SampledTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stratum: str
    inclusion_probability: float = Field(gt=0, le=1)


class HumanSample(BaseModel):
    """`steps/incorporation.annotate/sample.json`: the tasks people rate, each with its inclusion probability."""

    model_config = ConfigDict(extra="forbid")

    format_version: Literal[1] = 1
    sampling: Literal["uniform", "stratified", "active"]
    share: float
    seed: int
    #: the stage's tasks, and how many were drawn
    tasks: int
    sampled: int
    #: task id -> its stratum (condition/all) and inclusion probability, in the task file's order
    entries: dict[str, SampledTask]


def _tasks(path: Path) -> dict[str, Any]:
    from tailorbench.threestage.incorporation.analysis import read_ab_tasks

    return read_ab_tasks(path)


def _model_ratings(path: Path) -> dict[str, float]:
    """item -> the numeric rating of a judge's A/B ratings file (its model-group ratings)."""
    from tailorbench.agreement.ratings import read_ratings_file
    from tailorbench.agreement.records import DEFAULT_GROUP

    out: dict[str, float] = {}
    for r in read_ratings_file(path).ratings:
        if r.group != DEFAULT_GROUP and isinstance(r.label, int | float) and not isinstance(r.label, bool):
            out[r.item] = float(r.label)
    return out


def _items(task_id: str, task: Any) -> list[str]:
    from tailorbench.threestage.recentering_formats import ATTR_SEP

    return [f"{task_id}{ATTR_SEP}{key}" for key in task.attributes]


def draw_sample(tasks_path: Path, share: float, sampling: str, seed: int, votes: Sequence[Path] = ()
                ) -> HumanSample:
    """The tasks people rate, drawn from the task file (`draw_tasks`); `active` takes its uncertainty from the
    judges' ratings (`votes`): the mean rating of a task's attributes over the judges, most uncertain near 0
    ("no better")."""
    tasks = _tasks(tasks_path)
    ids = list(tasks)
    margin = None
    if sampling == "active":
        rated: dict[str, list[float]] = defaultdict(list)
        for path in votes:
            for item, value in _model_ratings(path).items():
                rated[item].append(value)
        margin = [float(np.mean([v for i in _items(t, tasks[t]) for v in rated.get(i, [])] or [0.0])) for t in ids]
    return draw_tasks(ids, [tasks[t].condition for t in ids], share, sampling, seed, margin)


def draw_tasks(ids: Sequence[str], conditions: Sequence[str], share: float, sampling: str, seed: int,
               margin: Sequence[float] | None = None) -> HumanSample:
    """`share` of the tasks (at least 2, at most all), drawn by the design `sampling` with `seed` (the config's
    `humans` block, `humanstudy.config.HumansConfig`): a pure function
    of the task ids and conditions in the task file's order (and for `active`, the judges' mean rating of each
    task), so `plan` draws what `run` draws."""
    from tailorbench.estimation.sample_plan import plan_entries
    from tailorbench.estimation.sampling import draw, uncertainty_from_margin

    total = len(ids)
    n = min(total, max(2, round(share * total)))
    strata = np.array([f"{c}/all" for c in conditions], dtype=object)
    uncertainty = None
    if sampling == "active":
        if margin is None:
            raise ValueError("an active sample needs the judges' ratings")
        uncertainty = uncertainty_from_margin(np.array(margin, dtype=float))
    got = draw(sampling, n, np.random.default_rng(seed), strata=strata, uncertainty=uncertainty,
               size=total) if total else None
    entries = plan_entries(list(ids), got, strata) if got is not None else {}
    return HumanSample(sampling=sampling, share=share, seed=seed, tasks=total,
                       sampled=len(entries),
                       entries={t: SampledTask(stratum=entries[t].stratum,
                                               inclusion_probability=entries[t].inclusion_probability)
                                for t in ids if t in entries})


def write_tasks(out: Output, tasks_path: Path, sample: HumanSample) -> int:
    """The drawn tasks (the task file's lines, in its order) as the annotate step's tasks.jsonl, and the sample
    as sample.json; returns how many tasks were written."""
    from tailorbench.threestage.recentering_formats import jsonl

    rows = [rec for _, rec in jsonl(tasks_path) if str(rec.get("id")) in sample.entries]
    out.write_jsonl("tasks.jsonl", rows)
    out.write_json(SAMPLE_FILE, sample.model_dump(mode="json"))
    return len(rows)


def read_sample(path: Path) -> HumanSample:
    """sample.json read back by its model (a DataError naming the file and field otherwise)."""
    from pydantic import ValidationError

    from tailorbench.errors import DataError

    data = load_json(path, dict, "a study's stage-3 sample (a JSON object)")
    try:
        return HumanSample.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise DataError(path, None, ".".join(str(p) for p in first["loc"]) or None,
                        f"{first['msg']}: not a study's stage-3 sample") from None


def _value(measure: str, rating: float) -> float:
    return float(rating <= 0) if measure == "share_no_better" else rating


def anchored_estimates(tasks_path: Path, export: Path, votes: Mapping[str, Path], sample: HumanSample,
                       level: float = 0.95) -> list[tuple[str, str, EstimateReport]]:
    """(judge, measure, estimate) for every judge of `votes` (name -> its ratings file) and measure: the
    judge-only figure (proxy-only), people's on the sample (human-only) and the human-anchored one, per task."""
    from tailorbench.agreement.ratings import read_ratings_file
    from tailorbench.agreement.records import DEFAULT_GROUP
    from tailorbench.estimation.anchored import estimate_items
    from tailorbench.estimation.items import RATINGS, Items
    from tailorbench.estimation.labels import HumanLabels, PlanEntry

    tasks = _tasks(tasks_path)
    human: dict[str, list[float]] = defaultdict(list)
    for r in read_ratings_file(export).ratings:
        if r.group == DEFAULT_GROUP and isinstance(r.label, int | float) and not isinstance(r.label, bool):
            human[r.item].append(float(r.label))
    plan = {t: PlanEntry(sample.sampling, e.inclusion_probability, e.stratum) for t, e in sample.entries.items()}
    out: list[tuple[str, str, EstimateReport]] = []
    for judge, path in votes.items():
        judged = _model_ratings(path)
        rated = {t: [i for i in _items(t, task) if i in judged] for t, task in tasks.items()}
        keep = [t for t in tasks if rated[t]]
        n_items = sum(len(rated[t]) for t in keep)
        left_out = sum(len(task.attributes) for task in tasks.values()) - n_items
        for measure, estimand in MEASURES.items():
            notes = [f"{left_out} rated attribute(s) without a rating of judge {judge}: left out"] if left_out else []
            scale = len(keep) / n_items if n_items else 0.0
            yhat = np.array([scale * sum(_value(measure, judged[i]) for i in rated[t]) for t in keep], dtype=float)
            values: dict[str, float] = {}
            raters: dict[str, int] = {}
            for t in keep:
                if all(human.get(i) for i in rated[t]):
                    values[t] = scale * sum(_value(measure, float(np.mean(human[i]))) for i in rated[t])
                    raters[t] = min(len(human[i]) for i in rated[t])
            conditions = np.array([plan[t].stratum.split("/")[0] if t in plan else tasks[t].condition for t in keep],
                                  dtype=object)
            items = Items(kind=RATINGS, ids=keep, split=conditions, tier=np.array(["all"] * len(keep), dtype=object),
                          system=np.zeros((len(keep), 1)), yhat=yhat, splits=sorted(set(conditions.tolist())),
                          tiers=["all"], estimand=estimand, notes=notes)
            labels = HumanLabels(values, raters, {t: plan[t] for t in keep if t in plan},
                                 f"the study's stage-3 export {export}",
                                 "mean of each attribute's raters (a task: its attributes' values summed, times "
                                 "tasks / attributes)", [])
            report = estimate_items(items, labels, system=f"judge {judge} ({path})",
                                    proxy=f"judge {judge}'s A/B ratings", level=level)
            out.append((judge, measure, report))
    return out


def estimate_file(judge: str, measure: str) -> str:
    """The analyse step's file of one judge's estimate of one measure."""
    return f"anchored.{judge}.{measure}.json"


ANCHORED_MD = "anchored.md"


def write_estimates(out: Output, estimates: Sequence[tuple[str, str, EstimateReport]]) -> list[str]:
    """Each estimate as its EstimateReport file and all of them in anchored.md; the names written."""
    from tailorbench.estimation.report import render_markdown

    names = []
    pages = ["# Stage 3: the judges' ratings anchored on people's", ""]
    for judge, measure, report in estimates:
        name = estimate_file(judge, measure)
        out.write_text(name, report.model_dump_json(indent=2) + "\n")
        names.append(name)
        pages.append(render_markdown(report, heading="##"))
    out.write_text(ANCHORED_MD, "\n".join(pages))
    return [*names, ANCHORED_MD]


def _interval(record: Any) -> dict[str, Any] | None:
    if record is None:
        return None
    return {"estimate": record.estimate, "ci": list(record.ci)}


def figures(estimates: Sequence[tuple[str, str, EstimateReport]]) -> dict[str, dict[str, Any]]:
    """judge -> measure -> the judge-only figure, people's on the sample, the anchored figure (each with its
    interval), judge-only minus anchored, the tasks and the tasks people rated."""
    out: dict[str, dict[str, Any]] = {}
    for judge, measure, report in estimates:
        cell = next(c for c in report.cells if c.cell == "all")
        anchored = cell.anchored
        out.setdefault(judge, {})[measure] = {
            "judge_only": _interval(cell.proxy_only), "human_only": _interval(cell.human_only),
            "anchored": _interval(anchored),
            "judge_minus_anchored": None if anchored is None else cell.proxy_only.estimate - anchored.estimate,
            "tasks": cell.n_items, "tasks_rated_by_people": cell.n_labels, "design": report.design,
            "effective_labels": cell.effective_labels, "note": cell.note,
        }
    return out
