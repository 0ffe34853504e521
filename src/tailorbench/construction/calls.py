"""The stages of `tailor build` whose items are model calls: the profile (from memory items, or personas given
as they are), the questions per persona, and the answers per question in the three variants (full, masked and
no persona), each prompt rendered from its template and each answer checked against its JSON schema."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable
from typing import Any

from tailorbench.construction.config import PROFILE_SECTIONS, RULES, BuildConfig
from tailorbench.construction.context import BuildContext
from tailorbench.construction.schemas import answer_schema, profile_schema, questions_schema
from tailorbench.construction.structured import StageStats, call_json
from tailorbench.errors import ConfigError
from tailorbench.personas import render_persona, select_sections
from tailorbench.prompts import split_messages


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
