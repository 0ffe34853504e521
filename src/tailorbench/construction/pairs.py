"""The last stages of `tailor build`, which call no model: the answers paired by rule (the answer written with
more of the persona is the candidate `chosen`; a missing or identical answer is a recorded failure), and the
export of the pairs as PairCase JSONL plus an annotation project."""

from __future__ import annotations

from typing import Any

from tailorbench.construction.config import RULES, BuildConfig
from tailorbench.construction.structured import StageStats
from tailorbench.files import ensure_dir, write_json_atomic, write_jsonl_atomic
from tailorbench.redact import redact
from tailorbench.schema import PairCase


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
