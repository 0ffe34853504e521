"""RM judge scoring speed: the `rm:` judge (dedup of identical triples, length-sorted batches) against a plain
batched loop over the same inputs (same encoder and truncation, same batch size and precision, no dedup, no
sort), on the PersonaFeedback dev split, both answer orders as the runner judges them. Also checks that both
give the same scores (within 1e-2 in bf16, 1e-5 in fp32). Goal: >= 2x pairs/s.

Robust to load drift on a shared machine: the users are cut into `--rounds` slices (by user, so the answers a
user's cases share stay in one slice and dedup is the same as on the whole split), and the two sides take
turns on each slice, alternating who goes first (plain, judge | judge, plain | ...). Each round gives a
ratio measured over a few tens of seconds; the report gives every round's ratio, their median and min/max,
and the overall ratio (total plain time / total judge time), with the 1-minute load average at each phase.
Both sides share the same loaded weights; the judge is a fresh `RewardModelJudge` per slice (no score carried
over between slices).

    flock /tmp/tailor-cpu.lock .venv/bin/python perf/rm_scoring.py [--limit 200] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections import defaultdict
from typing import Any

import numpy as np
import torch

from tailorbench.datasets import load_benchmark
from tailorbench.evaluate.runner import plan, sample_cases
from tailorbench.evaluate.settings import SettingOptions
from tailorbench.judges.reward_model import RewardModelJudge
from tailorbench.models.reward_hf import HFRewardModel, Triple, pad_batch
from tailorbench.schema import JudgeInput, PairCase
from tailorbench.train.trainer import resolve_model


def plain_loop(scorer: HFRewardModel, triples: list[Triple]) -> np.ndarray:
    """The baseline: encode every input, score in runner order, fixed-size batches, no dedup, no sort."""
    encoded, _ = scorer.encoder.encode(triples)
    out = np.zeros(len(triples))
    with torch.inference_mode():
        for start in range(0, len(encoded), scorer.batch_size):
            batch = pad_batch(encoded[start : start + scorer.batch_size], scorer.tokenizer.pad_token_id)
            out[start : start + scorer.batch_size] = scorer.forward(batch).cpu().numpy()
    if scorer.fmt.length_weight is not None:
        out += scorer.fmt.length_weight * scorer.fmt.length_feature([t[2] for t in triples])
    return out + scorer.feature_term(triples)


def run_judge(scorer: HFRewardModel, inputs: list[JudgeInput]) -> tuple[np.ndarray, int]:
    """What `tailor eval` does with an `rm:` judge: prepare on every input, then judge; (scores, distinct)."""
    judge = RewardModelJudge(scorer)
    asyncio.run(judge.prepare(inputs))
    verdicts = asyncio.run(judge.judge(inputs))
    scores = np.array([s for v in verdicts for s in (v.scores or {}).values()])
    return scores, int(judge.describe()["unique_inputs_scored"])


def user_slices(cases: list[PairCase], rounds: int) -> list[list[PairCase]]:
    """`rounds` slices of whole users with about equal numbers of cases (largest users first, greedy)."""
    by_user: dict[str, list[PairCase]] = defaultdict(list)
    for case in cases:
        by_user[case.user_id].append(case)
    slices: list[list[PairCase]] = [[] for _ in range(max(1, min(rounds, len(by_user))))]
    for user in sorted(by_user, key=lambda u: (-len(by_user[u]), u)):
        min(slices, key=len).extend(by_user[user])
    return slices


def load() -> float:
    return round(os.getloadavg()[0], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="../shared/data/personafeedback-general-dev")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="a seeded sample of this many cases")
    parser.add_argument("--rounds", type=int, default=4, help="user slices; the sides alternate on each")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    cases = sample_cases(load_benchmark(args.data).cases, args.limit, 0)

    def make(model: Any = None, tokenizer: Any = None) -> HFRewardModel:
        return HFRewardModel(resolve_model(args.model), max_length=args.max_length, precision=args.precision,
                             batch_size=args.batch_size, model=model, tokenizer=tokenizer)

    base = make()
    scorer = make(base.model, base.tokenizer)  # same weights, its own encoder (token cache)
    plain_loop(base, [(None, "warm-up", "warm-up")] * 2)  # first-call set-up (oneDNN) outside the timings

    rounds: list[dict[str, Any]] = []
    diffs: list[float] = []
    n_verdicts = n_triples = n_unique = 0
    for r, part in enumerate(user_slices(cases, args.rounds)):
        inputs = [t.input for t in plan(part, "persona", "both", 0, SettingOptions())]
        triples = [t for i in inputs for t in RewardModelJudge.triples(i)]
        timing: dict[str, Any] = {"round": r + 1, "cases": len(part), "verdicts": len(inputs),
                                  "triples": len(triples)}
        order = ("plain", "judge") if r % 2 == 0 else ("judge", "plain")
        for side in order:
            timing[f"{side}_load_start"] = load()
            start = time.perf_counter()
            if side == "plain":
                plain = plain_loop(base, triples)
            else:
                ours, unique = run_judge(scorer, inputs)
            timing[f"{side}_s"] = round(time.perf_counter() - start, 3)
        timing["unique_triples"] = unique
        timing["order"] = "/".join(order)
        timing["speedup"] = round(timing["plain_s"] / timing["judge_s"], 3)
        timing["load_end"] = load()
        diffs.append(float(np.abs(ours - plain).max()))
        n_verdicts, n_triples, n_unique = n_verdicts + len(inputs), n_triples + len(triples), n_unique + unique
        rounds.append(timing)
        print(json.dumps(timing), flush=True)

    plain_s = sum(t["plain_s"] for t in rounds)
    judge_s = sum(t["judge_s"] for t in rounds)
    ratios = [t["speedup"] for t in rounds]
    tol = 1e-2 if scorer.precision == "bf16" else 1e-5
    diff = max(diffs)
    print(json.dumps({
        "data": args.data, "cases": len(cases), "users": len({c.user_id for c in cases}), "verdicts": n_verdicts,
        "triples": n_triples, "unique_triples": n_unique, "work_ratio": round(n_triples / n_unique, 3),
        "precision": scorer.precision, "max_length": args.max_length, "batch_size": args.batch_size,
        "torch_threads": torch.get_num_threads(), "rounds": len(rounds),
        "plain_s": round(plain_s, 2), "judge_s": round(judge_s, 2),
        "plain_pairs_per_s": round(n_verdicts / plain_s, 2), "judge_pairs_per_s": round(n_verdicts / judge_s, 2),
        "speedup_overall": round(plain_s / judge_s, 3), "speedup_median": round(statistics.median(ratios), 3),
        "speedup_min": min(ratios), "speedup_max": max(ratios),
        "max_abs_score_diff": diff, "within_tolerance": diff <= tol, "tolerance": tol,
    }, indent=2))


if __name__ == "__main__":
    main()
