"""Stage 3 generation: a generic and a personalized answer per (user, prompt) item, then A/B-rating tasks for the
annotation service.

Conditions say which attributes the personalized answer is given: `gold` (the attributes the strict human
majority marks relevant, from stage-2 labels), `predicted` (the attributes one stage-2 rater — an LLM judge, a
baseline or the trained relevance classifier — votes relevant), `none` (no attribute: the personalized template
alone, a control for its wording). Why these three: the paper asks whether answers get better with the *right*
attributes, with the attributes an automated selector picks, and whether any gain is just the prompt.

Each task is rated per attribute on the gold-relevant attributes plus those given to the generator (so a wrongly
selected attribute can be judged too); `meta` records which were given and which are gold. Every call goes
through `models/` (the call cache makes a re-run free); prompts are Jinja templates shipped in `templates/`
beside this module (or the user's own files). Nothing is dropped silently: failed, empty and truncated
generations, items without a vote or without anything to rate, and identical answer pairs are counted.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailorbench.agreement.ratings import RatingSet
from tailorbench.errors import ConfigError
from tailorbench.files import Output
from tailorbench.models.base import GenParams, Message
from tailorbench.prompts import compile_template, split_messages
from tailorbench.threestage.llm import ask
from tailorbench.threestage.recentering_formats import RelevanceItem, item_key
from tailorbench.threestage.relevance.analysis import human_gold

CONDITIONS = ("gold", "predicted", "none")
TEMPLATE_DIR = Path(__file__).with_name("templates")
TASKS_FILE = "ab_tasks.jsonl"
GENERATIONS_FILE = "generations.jsonl"
MANIFEST_FILE = "generation.json"


@dataclass(frozen=True)
class PlannedTask:
    item: RelevanceItem
    condition: str
    given: tuple[str, ...]
    rated: tuple[str, ...]
    gold_relevant: tuple[str, ...]

    @property
    def task_id(self) -> str:
        return f"{self.item.index}-{self.condition}"


def predicted_votes(ratings: RatingSet, rater: str | None) -> tuple[str, dict[str, bool]]:
    """One rater's relevance votes (item key -> relevant); with several raters in the files, `rater` picks one."""
    names = sorted({r.rater for r in ratings.ratings})
    if not names:
        raise ConfigError("the --predicted files hold no usable vote")
    if rater is None:
        if len(names) > 1:
            raise ConfigError(f"the --predicted files hold several raters ({', '.join(names)}): pick one with "
                              "--predictor")
        rater = names[0]
    elif rater not in names:
        raise ConfigError(f"no rater {rater!r} in the --predicted files (found: {', '.join(names)})")
    return rater, {r.item: bool(r.label) for r in ratings.ratings if r.rater == rater}


def plan(
    items: Sequence[RelevanceItem],
    conditions: Sequence[str],
    gold: dict[str, bool] | None,
    predicted: dict[str, bool] | None,
) -> tuple[list[PlannedTask], Counter[str]]:
    """Which tasks to generate (pure: no model call); `skipped` counts every (item, condition) left out and why."""
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or not conditions:
        raise ConfigError(f"conditions must be among {', '.join(CONDITIONS)}, got {', '.join(conditions) or 'none'}")
    if "gold" in conditions and gold is None:
        raise ConfigError("the gold condition needs stage-2 human labels (--human or --export)")
    if "predicted" in conditions and predicted is None:
        raise ConfigError("the predicted condition needs a stage-2 vote file (--predicted)")
    tasks: list[PlannedTask] = []
    skipped: Counter[str] = Counter()
    for it in items:
        keys = {a: item_key(it.index, it.user_id, a) for a in it.attributes}
        gold_rel = tuple(a for a in it.attributes if gold is not None and gold.get(keys[a]))
        if gold is not None and any(keys[a] not in gold for a in it.attributes):
            skipped["attributes without a human label"] += sum(1 for a in it.attributes if keys[a] not in gold)
        for cond in dict.fromkeys(conditions):
            given = _given(cond, it, keys, gold_rel, predicted, skipped)
            if given is None:
                continue
            rated = tuple(a for a in it.attributes if a in gold_rel or a in given)
            if not rated:
                skipped[f"{cond}: nothing to rate (no gold-relevant or given attribute)"] += 1
                continue
            tasks.append(PlannedTask(it, cond, given, rated, gold_rel))
    return tasks, skipped


def _given(cond: str, it: RelevanceItem, keys: dict[str, str], gold_rel: tuple[str, ...],
           predicted: dict[str, bool] | None, skipped: Counter[str]) -> tuple[str, ...] | None:
    """The attributes an item's answer is given in condition `cond`; None (counted in `skipped`) when the item
    has no task in it."""
    if cond == "gold":
        if not gold_rel:
            skipped["gold: no attribute the human majority marks relevant"] += 1
            return None
        return gold_rel
    if cond == "predicted":
        assert predicted is not None
        votes = {a: predicted.get(keys[a]) for a in it.attributes}
        if all(v is None for v in votes.values()):
            skipped["predicted: no vote for the item"] += 1
            return None
        n_none = sum(v is None for v in votes.values())
        if n_none:
            skipped["predicted: attributes without a vote (not given)"] += n_none
        return tuple(a for a in it.attributes if votes[a])
    return ()


def load_templates(generic: str | Path | None = None, personalized: str | Path | None = None) -> dict[str, Any]:
    """The two templates (shipped ones unless overridden), with their source text for the manifest."""
    out: dict[str, Any] = {}
    for name, override in (("generic", generic), ("personalized", personalized)):
        path = Path(override) if override is not None else TEMPLATE_DIR / f"{name}.jinja"
        template, source = compile_template(path, f"{name} template")
        out[name] = {"template": template, "path": str(path), "sha256": hashlib.sha256(source.encode()).hexdigest()}
    return out


def render(template: Any, **variables: Any) -> list[Message]:
    """The chat messages of a rendered template (`<|system|>` / `<|user|>` lines start messages)."""
    return split_messages(template.render(**variables))


def _text(text: str) -> str | None:
    """A generation is usable when it is not empty after trimming (an empty one is counted invalid)."""
    return text.strip() or None


def generate(
    items: Sequence[RelevanceItem],
    model: str,
    out: Output,
    conditions: Sequence[str] = CONDITIONS,
    gold_ratings: RatingSet | None = None,
    predicted_ratings: RatingSet | None = None,
    predictor: str | None = None,
    name: str | None = None,
    params: GenParams | None = None,
    templates: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Generate, write `generations.jsonl`, `ab_tasks.jsonl` (the service's `ab_rating` items) and
    `generation.json` (the manifest: model, parameters, templates, every count) in the folder output `out`;
    returns the manifest."""
    gold = human_gold(gold_ratings) if gold_ratings is not None else None
    if gold is not None and not gold:
        raise ConfigError("the stage-2 human files hold no usable label")
    pred_name, predicted = (predicted_votes(predicted_ratings, predictor) if predicted_ratings is not None
                            else (None, None))
    tasks, skipped = plan(items, conditions, gold, predicted)
    templates = templates or load_templates()
    params = params or GenParams(temperature=0.0, max_tokens=512)
    # one request per distinct prompt: the generic answer of an item is shared by its conditions, and two
    # conditions that give the same attributes share the personalized answer
    requests: dict[str, tuple[str, int, tuple[str, ...], list[Message]]] = {}

    def want(role: str, t: PlannedTask) -> str:
        given = t.given if role == "personalized" else ()
        msgs = (render(templates["generic"]["template"], prompt=t.item.prompt) if role == "generic"
                else render(templates["personalized"]["template"], prompt=t.item.prompt, attributes=list(given)))
        key = json.dumps(msgs, ensure_ascii=False, sort_keys=True)
        requests.setdefault(key, (role, t.item.index, given, msgs))
        return key

    wanted = [(t, want("generic", t), want("personalized", t)) for t in tasks]
    keys = list(requests)
    batch = ask(model, [requests[k][3] for k in keys], _text, params, options)
    answers = dict(zip(keys, batch.answers))
    generator = name or model
    truncated = 0
    generations: list[dict[str, Any]] = []
    for k in keys:
        role, index, given, _ = requests[k]
        ans = answers[k]
        truncated += ans.finish_reason == "length"
        row: dict[str, Any] = {"index": index, "role": role, "attributes": list(given), "status": ans.status,
                               "text": ans.value, "finish_reason": ans.finish_reason, "generator": generator}
        if ans.status != "ok":
            row.update(raw=ans.raw, error=ans.error)
        generations.append(row)
    out.write_jsonl(GENERATIONS_FILE, generations)
    written: Counter[str] = Counter()
    not_written: Counter[str] = Counter()
    identical = 0
    ab_tasks: list[dict[str, Any]] = []
    for t, gk, pk in wanted:
        g, p = answers[gk], answers[pk]
        if g.value is None or p.value is None:
            side = "generic" if g.value is None else "personalized"
            not_written[f"{t.condition}: {side} answer {(g if g.value is None else p).status}"] += 1
            continue
        identical += g.value == p.value
        meta: dict[str, Any] = {
            "condition": t.condition, "index": t.item.index, "prompt_index": t.item.prompt_index,
            "given": list(t.given), "gold_relevant": list(t.gold_relevant), "generator": generator,
            "truncated": [r for r, a in (("generic", g), ("personalized", p)) if a.finish_reason == "length"],
        }
        if t.condition == "predicted":
            meta["predictor"] = pred_name
        ab_tasks.append({"id": t.task_id, "user_id": t.item.user_id, "prompt": t.item.prompt, "generic": g.value,
                         "personalized": p.value, "attributes": list(t.rated), "meta": meta})
        written[t.condition] += 1
    out.write_jsonl(TASKS_FILE, ab_tasks)
    notes = []
    if identical:
        notes.append(f"{identical} task(s) have identical generic and personalized answers (exported: raters "
                     "should find them the same)")
    if truncated:
        notes.append(f"{truncated} generation(s) stopped at max_tokens (kept; listed in meta.truncated)")
    manifest: dict[str, Any] = {
        "generator": generator,
        "model": model,
        "params": params.key_dict(),
        "templates": {k: {"path": v["path"], "sha256": v["sha256"]} for k, v in templates.items()},
        "conditions": list(dict.fromkeys(conditions)),
        "predictor": pred_name,
        "items": len(items),
        "planned_tasks": len(tasks),
        "tasks_written": dict(written),
        "tasks_not_written": dict(not_written),
        "skipped": dict(skipped),
        "identical_answers": identical,
        "truncated_generations": truncated,
        "generations": batch.accounting(),
        "files": {"tasks": str(out.path(TASKS_FILE)), "generations": str(out.path(GENERATIONS_FILE))},
        "notes": notes,
    }
    out.write_json(MANIFEST_FILE, manifest)
    return manifest
