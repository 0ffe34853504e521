"""results.json of a gen-eval run, computed from the run directory alone (manifest, generations.jsonl,
verdicts.jsonl, judge_validation.json), so `tailor report RUN` recomputes the same numbers.

Per case: each valid verdict scores 1 when the judge picked the generated answer, 0 when it picked the
reference, 1/2 when it abstained; the case score is their mean (win = 1, loss = 0, tie otherwise). An empty
answer loses to a non-empty one without a judge call (two empty answers tie). Failed generations (either side)
and cases with no valid verdict are left out of the rates and counted, with a warning. See docs/generation.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.bootstrap import bootstrap_ci, seed_for
from tailorbench.errors import DataError
from tailorbench.evaluate.lock import run_state
from tailorbench.evaluate.results import batch_costs
from tailorbench.failures import FailureCheck, check_max_failed, first_causes
from tailorbench.files import load_json, load_or_compute
from tailorbench.geneval.generate import GENERATIONS, MODEL, REFERENCE, generation_key, read_rows, verdict_key
from tailorbench.geneval.lcwr import length_controlled_win_rate
from tailorbench.geneval.validation import VALIDATION
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, benchmark_names, in_declared_order

RESULTS = "results.json"
VERDICTS = "verdicts.jsonl"
_VALID = ("ok", "abstain")


def _stats(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "median": None, "p10": None, "p90": None}
    arr = np.asarray(values, dtype=float)
    p10, median, p90 = np.quantile(arr, [0.1, 0.5, 0.9])
    return {"n": len(values), "mean": float(arr.mean()), "median": float(median), "p10": float(p10),
            "p90": float(p90)}


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def case_table(generations: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per sampled case: its outcome, score, verdict rows and the two answers' lengths/mentions."""
    answers = {(r["case_id"], r["role"]): r for r in generations}
    by_case: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in verdicts:
        by_case[row["case_id"]].append(row)
    out = []
    for (case_id, role), gen in answers.items():
        if role != MODEL:
            continue
        ref = answers.get((case_id, REFERENCE), {})
        rows = by_case.get(case_id, [])
        record: dict[str, Any] = {
            "case_id": case_id, "split": gen["split"], "tier": gen["tier"], "user_id": gen["user_id"],
            "gen_status": gen["status"], "ref_status": ref.get("status", "missing"),
            "len_generated": gen.get("length"), "len_reference": ref.get("length"),
            "mentions": len(gen.get("mentions") or []), "ref_mentions": len(ref.get("mentions") or []),
            "truncated": bool(gen.get("truncated")), "verdicts": rows, "score": None, "outcome": None,
        }
        if gen["status"] == "failed":
            record["outcome"] = "gen_failed"
        elif record["ref_status"] not in ("ok", "empty"):
            record["outcome"] = "ref_failed"
        elif gen["status"] == "empty" or record["ref_status"] == "empty":
            # an empty answer loses to any answer without a judge call; two empty answers tie
            score = 0.5 if gen["status"] == record["ref_status"] else 0.0 if gen["status"] == "empty" else 1.0
            record["score"] = score
            record["outcome"] = "win" if score == 1.0 else "loss" if score == 0.0 else "tie"
        else:
            ys = [1.0 if r["winner"] == "generated" else 0.0 if r["winner"] == "reference" else 0.5
                  for r in rows if r["status"] in _VALID]
            if not ys:
                record["outcome"] = "unjudged"
            else:
                score = float(np.mean(ys))
                record["score"] = score
                record["outcome"] = "win" if score == 1.0 else "loss" if score == 0.0 else "tie"
        out.append(record)
    return out


def cell_results(records: list[dict[str, Any]], label: str, n_boot: int, seed: int) -> dict[str, Any]:
    """Every figure of one cell (split x tier, a split, or everything)."""
    scored = [r for r in records if r["score"] is not None]
    n = len(scored)
    counts = {k: sum(1 for r in records if r["outcome"] == k)
              for k in ("win", "tie", "loss", "gen_failed", "ref_failed", "unjudged")}
    scores = np.array([r["score"] for r in scored], dtype=float)
    ci = bootstrap_ci(scores, n_boot=n_boot, seed=seed_for(seed, label)) if n else (None, None)
    lc = _length_controlled(scored, label, n_boot, seed)
    answered = [r for r in records if r["gen_status"] in ("ok", "empty")]
    statuses, both, consistent = _verdict_tally(records)
    return {
        "n_cases": len(records),
        "n": n,
        **{k: counts[k] for k in ("win", "tie", "loss")},
        "win_share": _rate(counts["win"], n), "tie_share": _rate(counts["tie"], n),
        "loss_share": _rate(counts["loss"], n),
        "win_rate": float(scores.mean()) if n else None,
        "ci": list(ci),
        "lc_win_rate": lc["estimate"], "lc_ci": lc["ci"], "lc_slope_per_sd": lc["slope_per_sd"],
        "lc_length_sd": lc["length_sd"], "lc_notes": lc["notes"], "lc_verdicts": lc["n_verdicts"],
        **_mention_figures(records, scored, answered),
        "length_generated": _stats([r["len_generated"] for r in answered if r["len_generated"] is not None]),
        "length_reference": _stats([r["len_reference"] for r in records if r["len_reference"] is not None]),
        "judge_consistency": _rate(consistent, both), "n_consistency": both,
        "gen_failed": counts["gen_failed"], "ref_failed": counts["ref_failed"], "unjudged": counts["unjudged"],
        "empty_answers": sum(1 for r in records if r["gen_status"] == "empty"),
        "empty_references": sum(1 for r in records if r["ref_status"] == "empty"),
        "truncated_answers": sum(1 for r in records if r["truncated"]),
        "verdict_status": dict(sorted(statuses.items())),
    }


def _length_controlled(scored: list[dict[str, Any]], label: str, n_boot: int, seed: int) -> dict[str, Any]:
    """The length-controlled win rate of the scored cases, over their valid verdicts."""
    diffs, ys, groups = [], [], []
    for r in scored:
        for v in r["verdicts"]:
            if v["status"] in _VALID:
                diffs.append(v["len_generated"] - v["len_reference"])
                ys.append(1.0 if v["winner"] == "generated" else 0.0 if v["winner"] == "reference" else 0.5)
                groups.append(r["case_id"])
    return length_controlled_win_rate(np.array(diffs), np.array(ys), np.array(groups, dtype=object), n_boot,
                                      seed_for(seed, "lc/" + label))


def _verdict_tally(records: list[dict[str, Any]]) -> tuple[dict[str, int], int, int]:
    """Verdicts by status; the cases with both orders judged, and those whose two verdicts agree."""
    statuses: dict[str, int] = defaultdict(int)
    both, consistent = 0, 0
    for r in records:
        for v in r["verdicts"]:
            statuses[v["status"]] += 1
        valid = [v for v in r["verdicts"] if v["status"] == "ok"]
        if len(valid) == 2:
            both += 1
            consistent += valid[0]["winner"] == valid[1]["winner"]
    return statuses, both, consistent


def _mention_figures(records: list[dict[str, Any]], scored: list[dict[str, Any]],
                     answered: list[dict[str, Any]]) -> dict[str, Any]:
    """How often answers (and references) mention the persona, and the win rate with and without a mention."""
    with_m = [r["score"] for r in scored if r["mentions"] > 0]
    without_m = [r["score"] for r in scored if r["mentions"] == 0]
    return {
        "mention_share": _rate(sum(1 for r in answered if r["mentions"] > 0), len(answered)),
        "mentions_mean": float(np.mean([r["mentions"] for r in answered])) if answered else None,
        "reference_mention_share": _rate(sum(1 for r in records if r["ref_mentions"] > 0),
                                         sum(1 for r in records if r["ref_status"] == "ok")),
        "win_rate_with_mentions": float(np.mean(with_m)) if with_m else None, "n_with_mentions": len(with_m),
        "win_rate_without_mentions": float(np.mean(without_m)) if without_m else None,
        "n_without_mentions": len(without_m),
    }


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise DataError(path, None, None, "missing from the gen-eval run directory")
    data: dict[str, Any] = load_json(path, dict, "a JSON object")
    return data


def compute_results(run_dir: Path) -> dict[str, Any]:
    manifest = _read_json(run_dir / "manifest.json")
    generations = read_rows(run_dir / GENERATIONS, generation_key)
    verdicts = read_rows(run_dir / VERDICTS, verdict_key)
    validation_path = run_dir / VALIDATION
    validation: dict[str, Any] = _read_json(validation_path) if validation_path.exists() else {
        "source": None, "warnings": ["judge validation has not run yet (interrupted run)"]}
    config = manifest.get("config", {})
    n_boot, seed = int(config.get("n_boot", 1000)), int(manifest.get("seed", 0))
    records = case_table(generations, verdicts)
    metrics: dict[str, Any] = {}
    names = benchmark_names(manifest.get("data_stats") or {})
    for split in in_declared_order(names.get("splits", DEFAULT_SPLITS), (r["split"] for r in records)):
        in_split = [r for r in records if r["split"] == split]
        if not in_split:
            continue
        block: dict[str, Any] = {}
        for tier in in_declared_order(names.get("tiers", DEFAULT_TIERS), (r["tier"] for r in in_split)):
            in_cell = [r for r in in_split if r["tier"] == tier]
            if in_cell:
                block[tier] = cell_results(in_cell, f"{split}/{tier}", n_boot, seed)
        block["all"] = cell_results(in_split, f"{split}/all", n_boot, seed)
        metrics[split] = block
    metrics["all"] = cell_results(records, "all", n_boot, seed)
    total = metrics["all"]
    warnings: list[str] = list(manifest.get("warnings") or [])
    if total["gen_failed"]:
        warnings.append(f"{total['gen_failed']} generation(s) of the model under test failed: left out of the rates")
    if total["ref_failed"]:
        warnings.append(f"{total['ref_failed']} reference answer(s) failed: those cases are left out of the rates")
    if total["unjudged"]:
        warnings.append(f"{total['unjudged']} case(s) got no valid verdict (invalid or failed): left out of the rates")
    planned = int(manifest.get("n_cases", 0))
    if len(records) < planned:
        warnings.append(f"only {len(records)} of {planned} sampled cases have a generated answer (unfinished run)")
    warnings += [f"judge validation: {w}" for w in validation.get("warnings", [])]
    status = run_state(run_dir, manifest.get("status"))
    if status != "finished":
        warnings.append(f"run {'in progress' if status == 'running' else status}: continue it with "
                        f"`tailor gen-eval --resume {run_dir}`")
    failures = failure_summary(generations, verdicts, config.get("max_failed", 0.0))
    if failures["exceeded"]:
        warnings.append(f"failed calls: {failures['failed']} of {failures['calls']} (more than --max-failed "
                        f"{100 * failures['max_failed']:g}%): the run exits with code 3")
    from tailorbench.geneval.judge_reliability import judge_reliability, self_preference

    judge_table = judge_reliability(verdicts, n_boot, seed, names)
    own = self_preference(verdicts, manifest["judge"], manifest["model"], manifest["reference"], n_boot, seed)
    if own is not None and own["difference"] is not None:
        warnings.append(f"the judge's model wrote the {own['own_answer']} answers: it picks them in "
                        f"{100 * own['own_win_rate']:.1f}% of cases (self-preference; check with a judge of "
                        "another model on the same generations)")
    usage: dict[str, Any] = {"generation": _usage(generations), "judge": _usage(verdicts)}
    batch = batch_costs(run_dir)  # --batch: the provider batches of the generating models and the judge
    if batch is not None:
        usage["batch"] = batch
    return {
        "kind": "gen-eval",
        "model": manifest["model"], "reference": manifest["reference"], "judge": manifest["judge"],
        "setting": manifest["setting"], "judge_setting": manifest.get("judge_setting", "persona"),
        "data": manifest.get("data"), "dataset_fingerprint": manifest.get("dataset_fingerprint"),
        "status": status, "seed": seed, "n_boot": n_boot, "failures": failures,
        "cases_planned": planned, "cases_generated": len(records),
        "cases_per_split_tier": manifest.get("cases_per_split_tier", {}),
        **({"benchmark_names": names} if names else {}),
        "metrics": metrics, "judge_validation": validation, "warnings": warnings, "usage": usage,
        "reliability": judge_table, "self_preference": own,
        "calls": {"generations": len(generations), "generations_cached": sum(1 for r in generations if r.get("cached")),
                  "verdicts": len(verdicts), "verdicts_cached": sum(1 for r in verdicts if r.get("cached"))},
    }


def failure_summary(generations: list[dict[str, Any]], verdicts: list[dict[str, Any]], max_failed: float
                    ) -> dict[str, Any]:
    """Calls that never returned a usable answer: failed generations (the benchmark's `chosen` references are
    no calls) and failed verdicts, the first errors, and whether they exceed `max_failed` (exit code 3)."""
    calls = [r for r in generations if r.get("source") != "chosen"] + verdicts
    failed = [r for r in calls if r.get("status") == "failed"]
    check = FailureCheck("gen-eval", len(failed), len(calls), check_max_failed(max_failed),
                         first_causes(r.get("error") for r in failed), unit="calls")
    return {"failed": check.failed, "calls": check.total, "share": check.share, "max_failed": check.max_failed,
            "exceeded": check.exceeded, "failed_generations": sum(1 for r in failed if "role" in r),
            "failed_verdicts": sum(1 for r in failed if "role" not in r), "first_errors": check.causes}


def check_run(results: Mapping[str, Any], max_failed: float | None = None, what: str | None = None) -> FailureCheck:
    """The exit-code-3 rule for a gen-eval run (the twin of `evaluate.results.check_run`)."""
    block = results.get("failures") or {}
    limit = check_max_failed(block.get("max_failed", 0.0) if max_failed is None else max_failed)
    return FailureCheck(what or f"gen-eval {results.get('model')}", int(block.get("failed", 0)),
                        int(block.get("calls", 0)), limit, list(block.get("first_errors", [])), unit="calls")


def _usage(rows: list[dict[str, Any]]) -> dict[str, Any]:
    costs = [r["cost_usd"] for r in rows if r.get("cost_usd") is not None]
    return {"prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in rows),
            "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in rows),
            "cost_usd": float(sum(costs)) if costs else None}


def load_results(run_dir: Path) -> dict[str, Any]:
    """results.json of a gen-eval run, recomputed when missing (an interrupted run); status read live."""
    results = load_or_compute(run_dir / RESULTS, lambda: compute_results(run_dir))
    results["status"] = run_state(run_dir, results.get("status"))
    return results
