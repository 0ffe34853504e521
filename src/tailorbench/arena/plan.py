"""`tailor arena plan DIR` (what the config will do: contestants, pairs, caps, an estimate of the cost; opens no
database and calls no model) and `tailor arena status DIR` (participants, battles by status, votes, flags, spend).

The cost estimate: each battle is two calls; a call's prompt is the system prompt, the profile when the
contestant has it (the questionnaire's longest answers) and a question of `questions.max_chars` / 4 tokens at
most — taken at a quarter of that, a typical question — and its answer `models.max_tokens` tokens at most. The
price per contestant comes from models/pricing.py (or its `prices` option); a model without a known price makes the
estimate unknown rather than zero. Battles: crowd places x battles per participant when the crowd has places,
else per participant only; the spend caps bound the total.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.arena.config import ArenaConfig


def _call_cost(config: ArenaConfig, name: str) -> float | None:
    from tailorbench.models.backends import parse_model_spec
    from tailorbench.models.pricing import PriceTable

    c = config.contestant(name)
    options = {**config.models.options, **c.options}
    prices = PriceTable.load(options.get("prices"))
    model = parse_model_spec(c.model).model
    profile = sum(f.max_chars for f in config.profile.fields) if c.profile else 0
    prompt = (80 + profile + config.questions.max_chars // 4) // 4
    return prices.cost(model, prompt, config.models.max_tokens)


def arena_plan(config: ArenaConfig, arena_dir: str | Path) -> dict[str, Any]:
    contestants = []
    for c in config.contestants:
        contestants.append({"name": c.name, "model": c.model, "profile": c.profile,
                            "cost_per_call_usd": _call_cost(config, c.name)})
    pairs = config.pairs
    per_pair = []
    for a, b in pairs:
        ca, cb = _call_cost(config, a), _call_cost(config, b)
        per_pair.append(None if ca is None or cb is None else ca + cb)
    per_battle = None if any(p is None for p in per_pair) else sum(p for p in per_pair if p is not None) / len(pairs)
    places = config.crowd.places
    battles = None if places is None else places * config.battles.per_participant
    gold = config.gold.rate
    model_battles = None if battles is None else round(battles * (1 - gold))
    cost = None if per_battle is None or model_battles is None else per_battle * model_battles
    caps = config.spend
    if cost is not None and caps.per_arena is not None:
        cost = min(cost, caps.per_arena)
    return {"arena": config.name, "dir": str(arena_dir), "illustrative": config.illustrative,
            "contestants": contestants, "pairs": [list(p) for p in pairs],
            "pairs_personalized_generic": [list(p) for p in config.pairs_personalized_generic],
            "battles_per_participant": config.battles.per_participant, "places": places, "gold_rate": gold,
            "questions": {"own": config.questions.own, "pool": len(config.pool_questions())},
            "profile_fields": [f.key for f in config.profile.fields], "segments": config.segment_fields(),
            "spend_caps_usd": {"per_participant": caps.per_participant, "per_arena": caps.per_arena},
            "cost_per_battle_usd": per_battle, "battles": battles, "estimated_cost_usd": cost,
            "database": config.database or f"sqlite: {Path(arena_dir) / 'arena.sqlite'}"}


def arena_status(config: ArenaConfig, store: Any) -> dict[str, Any]:
    counts = store.status_counts()
    caps = config.spend
    return {"arena": config.name, "database": store.where, "illustrative": config.illustrative, **counts,
            "spend_caps_usd": {"per_participant": caps.per_participant, "per_arena": caps.per_arena},
            "arena_cap_reached": caps.per_arena is not None and counts["spend_usd"] >= caps.per_arena,
            "exports": store.exports_made()}
