"""The planner: which (case, order) pairs a run judges and what the judge sees for each (`plan`, its `Task`s), the
seeded sample (`select_cases`) and the row mapper from a verdict to a predictions line (`to_prediction`).

`plan` and `to_prediction` are pure functions of their inputs, so a shard of cases can be judged anywhere and the
predictions concatenated. Only the planner decides which answer is A and which is B.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tailorbench.datasets import Benchmark, filter_cases
from tailorbench.errors import ConfigError
from tailorbench.evaluate.config import EvalConfig
from tailorbench.evaluate.settings import SettingOptions, prepare_setting
from tailorbench.personas import cjk_share
from tailorbench.redact import redact
from tailorbench.runlog import FORMAT_VERSION
from tailorbench.schema import JudgeInput, Order, PairCase, Verdict


@dataclass(frozen=True)
class Task:
    case: PairCase
    order: Order
    input: JudgeInput
    #: prediction fields shared by the case's orders (computed once per case)
    fields: dict[str, Any]


def slug(text: str) -> str:
    """Directory-safe name of a judge spec without its credentials: `:`, `/`, `@`, `?`, `&`, `=`, `*`, `[`,
    `]`, `,` and spaces become `_`."""
    out = redact(text)
    for char in ":/@ ?&=*[],":
        out = out.replace(char, "_")
    return out


def orders_for(case: PairCase, orders: str, seed: int) -> tuple[Order, ...]:
    """`both`: AB and BA. `random`: one order per case from a hash of (seed, case id), so it is stable
    under sharding and resume. `authors`: the one order the benchmark's authors' scripts draw for the case
    (`meta.authors_order`: Personalized RewardBench's seed-42 placement)."""
    if orders == "both":
        return ("AB", "BA")
    if orders == "authors":
        drawn = case.meta.get("authors_order")
        if drawn not in ("AB", "BA"):
            raise ConfigError(f"--orders authors: case {case.id!r} has no authors' order (meta.authors_order: "
                              "the Personalized RewardBench layout draws one)")
        return (drawn,)
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
    `schema.Prediction` as a plain dict of exactly its fields (the hot path: no model built per line; every line
    read back is validated against the model, strictly, and the tests check the writer's lines the same way)."""
    ok = verdict.status == "ok" and verdict.choice is not None
    usage = verdict.usage
    return {
        "format_version": FORMAT_VERSION,
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
    cases = filter_cases(benchmark.cases, config.splits, config.tiers, benchmark)
    return sample_cases(cases, config.limit, config.seed)

