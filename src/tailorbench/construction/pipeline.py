"""The stages: profile -> questions -> answers -> pairs -> export. Each writes `<out>/<stage>.jsonl` (its
records) and `<out>/stages/<stage>.json` (fingerprint, counters, failures) when it finishes.

A stage is reused when its checkpoint's fingerprint matches: a hash of everything that decides its output (its
part of the config, its template source, the model, the fingerprint of the stage before it, and for `profile`
the memory file's bytes). A changed template re-runs that stage and the ones after it; the call cache still
serves every request it has seen, so a re-run costs zero calls. Items that fail after all retries are recorded
in the checkpoint (`failures`) and counted, never silently dropped; later stages work on what succeeded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tailorbench.aio import run_sync
from tailorbench.construction import STAGES
from tailorbench.construction.config import PROFILE_SECTIONS, RULES, BuildConfig, SplitNames, load_build_config
from tailorbench.construction.schemas import answer_schema, profile_schema, questions_schema
from tailorbench.construction.structured import StageStats, call_json, load_template
from tailorbench.datasets.rows import InvalidRows, read_jsonl
from tailorbench.errors import ConfigError
from tailorbench.failures import FailureCheck, first_causes
from tailorbench.files import ensure_dir, write_json_atomic, write_jsonl_atomic
from tailorbench.logs import get_logger
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import ChatModel, GenParams
from tailorbench.options import check_writable
from tailorbench.personas import render_persona, select_sections
from tailorbench.prompts import split_messages
from tailorbench.redact import redact
from tailorbench.schema import PairCase
from tailorbench.version import __version__

notes_log = get_logger(__name__)

VARIANTS = {"A1": "full persona", "A2": "masked persona", "A3": "no persona"}
#: stages whose items are model calls; the others count outcomes (identical answers ...), not failed calls
CALL_STAGES = ("profile", "questions", "answers")


def _hash(*parts: Any) -> str:
    payload = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in read_jsonl(path, InvalidRows())]


@dataclass
class StageReport:
    name: str
    status: str  # ran | reused
    fingerprint: str
    records: int
    stats: dict[str, Any]
    failures: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BuildContext:
    config: BuildConfig
    model: ChatModel | None = None
    templates: dict[str, tuple[Any, str]] = field(default_factory=dict)

    def template(self, name: str) -> tuple[Any, str]:
        if name not in self.templates:
            self.templates[name] = load_template(name, self.config.templates.get(name))
        return self.templates[name]

    def chat_model(self) -> ChatModel:
        if self.model is None:
            self.model = make_chat_model(self.config.model, model_options(self.config))
        return self.model

    def params(self, max_tokens: int | None) -> GenParams:
        gen = self.config.generation
        return GenParams(temperature=gen.temperature, max_tokens=max_tokens or gen.max_tokens, seed=gen.seed)

    @property
    def attempts(self) -> int:
        return 1 + self.config.retries


def model_options(config: BuildConfig) -> dict[str, Any]:
    """The model's backend options on the build's executor. Under `--executor ray` a vllm: model's engines are
    Ray Data LLM replicas on the cluster; a build has nothing else to spread, so any other model is refused (it
    would run in this process all the same)."""
    from tailorbench.evaluate.executors import generator_options

    options = generator_options(config.model, config.model_options, config.executor, config.ray_address,
                                config.executor_options)
    if config.executor == "ray" and "ray_data" not in options:
        raise ConfigError(f"--executor ray spreads a build's generation for a vllm: model (its engines as Ray Data "
                          f"LLM replicas, docs/scale.md); {config.model} would run in this process: leave "
                          "--executor out, or build with a vllm: model")
    return options


# --- profile ---------------------------------------------------------------------------------------------


def render_profile_prompt(ctx: BuildContext, user_id: str, items: list[dict[str, Any]]) -> list[dict[str, str]]:
    template, _ = ctx.template("profile")
    return split_messages(template.render(user_id=user_id, items=items, sections=PROFILE_SECTIONS,
                                          max_attributes=ctx.config.profile.max_attributes))


def _memory_refs(config: BuildConfig, items: list[Any], stats: StageStats) -> list[dict[str, Any]]:
    """The items the profiler sees, each with a short ref (m1, m2 ...) the model cites as evidence."""
    limit = config.profile.max_memory_items
    if len(items) > limit:
        stats.note("memory_items_not_shown", len(items) - limit)
    out = []
    for k, item in enumerate(items[:limit], start=1):
        text = " ".join(item.text.split())
        if len(text) > config.profile.item_chars:
            stats.note("memory_items_clipped")
            text = text[: config.profile.item_chars - 1] + "…"
        out.append({"ref": f"m{k}", "id": item.id, "text": text, "time": (item.time or "")[:10]})
    return out


def assemble_persona(attributes: list[dict[str, Any]], refs: dict[str, str], stats: StageStats
                     ) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Attributes -> a PersonaFeedback-shaped profile and, per `Section > Key`, the memory item ids behind it.
    Values_and_Interests is a free list; a repeated key keeps both values (`Key_2`)."""
    persona: dict[str, Any] = {}
    evidence: dict[str, list[str]] = {}
    for attr in attributes:
        section, key, value = attr["section"], attr["key"].strip(), attr["value"].strip()
        if not key or not value:
            stats.note("blank_attributes_dropped")
            continue
        ids = []
        for ref in attr["evidence"]:
            if ref in refs:
                ids.append(refs[ref])
            else:
                stats.note("unknown_evidence_refs")
        if not ids:
            stats.note("attributes_without_evidence")
        node = persona.setdefault(section, {})
        name, n = key, 2
        while name in node:
            name, n = f"{key}_{n}", n + 1
        node[name] = value
        evidence[f"{section} > {name}"] = ids
    return persona, evidence


def _chosen_users(config: BuildConfig, available: list[str], where: str) -> list[str]:
    users = config.users or available
    missing = [u for u in users if u not in set(available)]
    if missing:
        raise ConfigError(f"users not in {where}: {', '.join(missing[:10])}")
    return users


def load_personas(spec: str) -> dict[str, dict[str, Any]]:
    """user -> persona of a benchmark any registered layout reads (each user's first case's persona)."""
    from tailorbench.datasets.loader import load_benchmark

    personas: dict[str, dict[str, Any]] = {}
    for case in load_benchmark(spec).cases:
        personas.setdefault(case.user_id, case.persona)
    return personas


def profiles_from_personas(config: BuildConfig, stats: StageStats
                           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The profile stage when the people come with personas: each chosen user's persona as it is (no model
    call); a user whose persona is empty is a failure naming them."""
    assert config.personas is not None
    personas = load_personas(config.personas)
    users = _chosen_users(config, list(personas), config.personas)
    records = [{"user_id": u, "persona": personas[u], "evidence": {}, "memory_shown": [], "source": "personas"}
               for u in users if personas[u]]
    failures = [{"user_id": u, "errors": ["no persona in the data"]} for u in users if not personas[u]]
    stats.items += len(users)
    stats.ok += len(records)
    stats.gave_up += len(failures)
    return records, failures


async def stage_profile(ctx: BuildContext, stats: StageStats) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from tailorbench.memory.store import by_user, read_memory

    config = ctx.config
    if config.memory is None:
        return profiles_from_personas(config, stats)
    memory = by_user(read_memory(config.memory))
    users = _chosen_users(config, list(memory), str(config.memory))
    schema = profile_schema(config)
    params = ctx.params(config.profile.max_tokens)

    async def one(user: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        items = _memory_refs(config, memory[user], stats)
        refs = {item["ref"]: item["id"] for item in items}
        outcome = await call_json(ctx.chat_model(), render_profile_prompt(ctx, user, items), schema, "profile",
                                  config.structured_output, params, ctx.attempts, stats)
        if outcome.value is None:
            return None, {"user_id": user, "errors": outcome.errors}
        persona, evidence = assemble_persona(outcome.value["attributes"], refs, stats)
        if not persona:
            return None, {"user_id": user, "errors": ["no usable attribute"]}
        shown = [{"id": i["id"], "text": i["text"]} for i in items]
        return {"user_id": user, "persona": persona, "evidence": evidence, "memory_shown": shown,
                "attempts": outcome.attempts}, None

    return await _gather(stats, [one(u) for u in users])


async def _gather(stats: StageStats, jobs: list[Awaitable[tuple[dict[str, Any] | None, dict[str, Any] | None]]]
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    stats.items += len(jobs)
    done = await asyncio.gather(*jobs)
    records = [r for r, _ in done if r is not None]
    failures = [f for _, f in done if f is not None]
    stats.ok += len(records)
    stats.gave_up += len(failures)
    return records, failures


# --- questions -------------------------------------------------------------------------------------------


def render_questions_prompt(ctx: BuildContext, persona: dict[str, Any]) -> list[dict[str, str]]:
    template, _ = ctx.template("questions")
    q = ctx.config.questions
    return split_messages(template.render(persona=render_persona(persona), scenes=q.scenes, per_user=q.per_user))


def _check_questions(value: dict[str, Any]) -> list[str]:
    return [f"$.questions[{k}].question: blank" for k, q in enumerate(value["questions"]) if not q["question"].strip()]


async def stage_questions(ctx: BuildContext, stats: StageStats, profiles: list[dict[str, Any]]
                          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    config = ctx.config
    schema = questions_schema(config)
    params = ctx.params(config.questions.max_tokens)
    pool = config.general_pool()

    async def one(profile: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        user = profile["user_id"]
        outcome = await call_json(ctx.chat_model(), render_questions_prompt(ctx, profile["persona"]), schema,
                                  "questions", config.structured_output, params, ctx.attempts, stats,
                                  check=_check_questions)
        if outcome.value is None:
            return None, {"user_id": user, "errors": outcome.errors}
        questions = [{"id": f"{user}:s{k}", "split": config.splits.specific, "scene": q["scene"],
                      "question": q["question"].strip()} for k, q in enumerate(outcome.value["questions"], start=1)]
        return {"user_id": user, "questions": questions}, None

    records, failures = await _gather(stats, [one(p) for p in profiles])
    want = config.questions.general_per_user
    if want and len(pool) < want:
        stats.note("general_pool_smaller_than_general_per_user")
    for record in records:
        # general questions come from the supplied pool, sampled per user with a seeded generator
        rng = random.Random(f"{config.seed}\x1f{record['user_id']}\x1fgeneral")
        picked = rng.sample(pool, min(want, len(pool))) if want else []
        record["questions"] += [{"id": f"{record['user_id']}:g{k}", "split": config.splits.general, "scene": None,
                                 "question": q}
                                for k, q in enumerate(picked, start=1)]
    return records, failures


# --- answers ---------------------------------------------------------------------------------------------


def mask_persona(config: BuildConfig, user_id: str, persona: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A2's persona and the `Section > Key` paths it hides: named sections, or a seeded share of the leaves."""
    mask = config.answers.mask
    if mask.sections:
        hidden_sections = {s for s in persona if s.lower() in {m.lower() for m in mask.sections}}
        kept = select_sections(persona, [s for s in persona if s not in hidden_sections])
        return kept, [f"{s} > {k}" for s in sorted(hidden_sections) for k in persona[s]]
    leaves = [(s, k) for s, node in persona.items() if isinstance(node, dict) for k in node]
    share = mask.share if mask.share is not None else 0.5
    rng = random.Random(f"{config.seed}\x1f{user_id}\x1fmask")
    if not leaves:  # a flat profile (a survey's fields, another layout's persona): its fields are the leaves
        fields = list(persona)
        n_hide = min(len(fields) - 1, max(1, round(share * len(fields)))) if len(fields) > 1 else 0
        hidden_fields = set(rng.sample(fields, n_hide))
        return {k: v for k, v in persona.items() if k not in hidden_fields}, sorted(hidden_fields)
    n_hide = min(len(leaves) - 1, max(1, round(share * len(leaves)))) if len(leaves) > 1 else 0
    hidden = set(rng.sample(leaves, n_hide))
    masked: dict[str, Any] = {}
    for section, node in persona.items():
        if isinstance(node, dict):
            kept_node = {k: v for k, v in node.items() if (section, k) not in hidden}
            if kept_node:
                masked[section] = kept_node
        else:
            masked[section] = node
    return masked, [f"{s} > {k}" for s, k in sorted(hidden)]


def render_answer_prompt(ctx: BuildContext, question: str, persona: dict[str, Any] | None, variant: str
                         ) -> list[dict[str, str]]:
    template, _ = ctx.template("answer")
    text = render_persona(persona) if persona else None
    return split_messages(template.render(question=question, persona=text, variant=variant))


def _check_answer(value: dict[str, Any]) -> list[str]:
    return [] if value["answer"].strip() else ["$.answer: blank"]


async def stage_answers(ctx: BuildContext, stats: StageStats, profiles: list[dict[str, Any]],
                        questions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    config = ctx.config
    schema = answer_schema(config)
    params = ctx.params(config.answers.max_tokens)
    personas = {p["user_id"]: p["persona"] for p in profiles}
    needed = sorted({v for rule in config.pairs.rules for v in RULES[rule]})

    async def one(user: str, q: dict[str, Any], variant: str, persona: dict[str, Any] | None
                  ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        outcome = await call_json(ctx.chat_model(), render_answer_prompt(ctx, q["question"], persona, variant),
                                  schema, "answer", config.structured_output, params, ctx.attempts, stats,
                                  check=_check_answer)
        key = {"user_id": user, "question_id": q["id"], "variant": variant}
        if outcome.value is None:
            return None, {**key, "errors": outcome.errors}
        return {**key, "answer": outcome.value["answer"].strip(), "attempts": outcome.attempts}, None

    jobs: list[Awaitable[tuple[dict[str, Any] | None, dict[str, Any] | None]]] = []
    masks: dict[str, list[str]] = {}
    for record in questions:
        user = record["user_id"]
        full = personas[user]
        masked, hidden = mask_persona(config, user, full)
        masks[user] = hidden
        by_variant = {"A1": full, "A2": masked, "A3": None}
        for q in record["questions"]:
            jobs.extend(one(user, q, v, by_variant[v]) for v in needed)
    records, failures = await _gather(stats, jobs)
    for r in records:
        r["masked"] = masks[r["user_id"]] if r["variant"] == "A2" else None
    return records, failures


# --- pairs and export ------------------------------------------------------------------------------------


def make_pairs(config: BuildConfig, stats: StageStats, questions: list[dict[str, Any]],
               answers: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pairs by rule: the answer written with more of the persona is the candidate `chosen`; humans decide."""
    by_key = {(a["question_id"], a["variant"]): a for a in answers}
    pairs: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    for record in questions:
        for q in record["questions"]:
            for rule in config.pairs.rules:
                stats.items += 1
                hi, lo = RULES[rule]
                a, b = by_key.get((q["id"], hi)), by_key.get((q["id"], lo))
                if a is None or b is None:
                    failures.append({"question_id": q["id"], "rule": rule, "errors": ["an answer is missing"]})
                    stats.note("missing_answer")
                    continue
                if " ".join(a["answer"].split()) == " ".join(b["answer"].split()):
                    failures.append({"question_id": q["id"], "rule": rule, "errors": ["identical answers"]})
                    stats.note("identical_answers")
                    continue
                pairs.append({
                    "id": f"{q['id']}:{rule}", "user_id": record["user_id"], "split": q["split"],
                    "question_id": q["id"], "scene": q["scene"], "question": q["question"],
                    "rule": rule, "expected_difficulty": config.pairs.difficulty.get(rule, "medium"),
                    "chosen": a["answer"], "rejected": b["answer"], "chosen_variant": hi, "rejected_variant": lo,
                    "masked": a["masked"] or b["masked"],
                })
                stats.ok += 1
    stats.gave_up = len(failures)
    return pairs, failures


def export(config: BuildConfig, stats: StageStats, profiles: list[dict[str, Any]],
           pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PairCase JSONL (tier = the candidate expected difficulty until humans annotate) and an annotation
    project: the pairwise import file plus attribute items (stage 1 of the human-centred evaluation)."""
    from tailorbench.datasets.benchmark import Benchmark
    from tailorbench.datasets.native import write_benchmark

    out = config.out / "export"
    ensure_dir(out / "annotation")
    personas = {p["user_id"]: p["persona"] for p in profiles}
    cases = [
        PairCase(
            id=p["id"], split=p["split"], tier=p["expected_difficulty"], user_id=p["user_id"],
            persona=personas[p["user_id"]], question=p["question"], chosen=p["chosen"], rejected=p["rejected"],
            meta={"pair_rule": p["rule"], "expected_difficulty": p["expected_difficulty"],
                  "tier_source": "expected_difficulty (not annotated)", "chosen_variant": p["chosen_variant"],
                  "rejected_variant": p["rejected_variant"], "question_id": p["question_id"], "scene": p["scene"],
                  "masked": p["masked"], "build": config.name, "model": redact(config.model)},
        )
        for p in pairs
    ]
    declared = Benchmark("build", "native", cases, splits=(config.splits.specific, config.splits.general),
                         tiers=config.pairs.tiers())
    n_pairs = write_benchmark(declared, out / "pairs.jsonl")
    attributes = []
    for p in profiles:
        if not p["memory_shown"]:  # personas given as they are: no conversation to judge attributes against
            stats.note("attribute_items_without_conversation")
            continue
        attrs = [{"id": f"{s}.{k}".replace("::", ":"), "text": f"{s} > {k}", "value": str(v)}
                 for s, node in p["persona"].items() if isinstance(node, dict) for k, v in node.items()]
        if attrs:
            attributes.append({"id": f"{config.name}:{p['user_id']}", "user_id": p["user_id"],
                               "conversation": [{"role": "user", "content": m["text"]} for m in p["memory_shown"]],
                               "attributes": attrs, "meta": {"evidence": p["evidence"], "build": config.name}})
    write_jsonl_atomic(out / "annotation" / "attributes.jsonl", attributes)
    write_benchmark(declared, out / "annotation" / "pairwise.jsonl")
    project = {
        "name": config.annotation.project or config.name,
        "annotators_per_item": config.annotation.annotators_per_item,
        "imports": [i for i in (
            {"task": "pairwise", "file": "pairwise.jsonl", "format": "paircase", "items": n_pairs},
            {"task": "attributes", "file": "attributes.jsonl", "format": "items", "items": len(attributes)},
        ) if i["items"]],  # an empty file is not an import (the importer refuses it)
    }
    write_json_atomic(out / "annotation" / "project.json", project)
    stats.items = stats.ok = n_pairs
    stats.note("attribute_items", len(attributes))
    return [{"file": "export/pairs.jsonl", "cases": n_pairs},
            {"file": "export/annotation/project.json", "pairwise": n_pairs, "attributes": len(attributes)}]


# --- driver ----------------------------------------------------------------------------------------------


def stage_fingerprints(ctx: BuildContext) -> dict[str, str]:
    """Chained fingerprints: each stage's inputs plus the fingerprint of the stage before it."""
    c = ctx.config
    common = (c.model, c.model_options, c.structured_output, c.generation.model_dump(), c.retries)
    if c.memory is not None:
        source = hashlib.sha256(c.memory.read_bytes()).hexdigest() if c.memory.is_file() else None
        fp_profile = _hash("profile", common, source, c.users, c.profile.model_dump(), ctx.template("profile")[1])
    else:  # personas taken as they are: only the data and the users chosen matter
        fp_profile = _hash("profile", "personas", _hash(sorted(load_personas(str(c.personas)).items())), c.users)
    fp: dict[str, str] = {"profile": fp_profile}
    fp["questions"] = _hash(fp["profile"], common, c.seed, c.questions.model_dump(), c.general_pool(),
                            *([c.splits.model_dump()] if c.splits != SplitNames() else []),
                            ctx.template("questions")[1])
    fp["answers"] = _hash(fp["questions"], common, c.seed, c.answers.model_dump(), c.pairs.rules,
                          ctx.template("answer")[1])
    fp["pairs"] = _hash(fp["answers"], c.pairs.model_dump())
    fp["export"] = _hash(fp["pairs"], c.name, c.annotation.model_dump(), __version__)
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
    return _read_jsonl(records), meta


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
