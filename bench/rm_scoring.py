"""RM judge scoring speed: the `rm:` judge (dedup of identical triples, length-sorted batches) against a plain
batched loop over the same inputs (same encoder and truncation, same batch size and precision, no dedup, no
sort), on the PersonaFeedback dev split, both answer orders as the runner judges them. Also checks that both
give the same scores (within 1e-2 in bf16, 1e-5 in fp32). Goal: >= 2x pairs/s.

    .venv/bin/python bench/rm_scoring.py [--data ../shared/data/personafeedback-general-dev] [--limit 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import numpy as np
import torch

from tailorbench.datasets import load_benchmark
from tailorbench.evaluate.runner import plan, sample_cases
from tailorbench.evaluate.settings import SettingOptions
from tailorbench.judges.reward_model import RewardModelJudge
from tailorbench.models.reward_hf import HFRewardModel, pad_batch
from tailorbench.train.trainer import resolve_model


def plain_loop(scorer: HFRewardModel, triples: list[tuple[str | None, str, str]]) -> np.ndarray:
    encoded, _ = scorer.encoder.encode(triples)
    out = np.zeros(len(triples))
    with torch.inference_mode():
        for start in range(0, len(encoded), scorer.batch_size):
            batch = pad_batch(encoded[start : start + scorer.batch_size], scorer.tokenizer.pad_token_id)
            out[start : start + scorer.batch_size] = scorer.forward(batch).cpu().numpy()
    if scorer.fmt.length_weight is not None:
        out += scorer.fmt.length_weight * scorer.fmt.length_feature([t[2] for t in triples])
    return out + scorer.feature_term(triples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="../shared/data/personafeedback-general-dev")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="a seeded sample of this many cases")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()
    torch.manual_seed(0)
    cases = sample_cases(load_benchmark(args.data).cases, args.limit, 0)
    inputs = [t.input for t in plan(cases, "persona", "both", 0, SettingOptions())]
    triples = [t for i in inputs for t in RewardModelJudge.triples(i)]

    base = HFRewardModel(resolve_model(args.model), max_length=args.max_length, precision=args.precision,
                         batch_size=args.batch_size)
    start = time.perf_counter()
    plain = plain_loop(base, triples)
    plain_s = time.perf_counter() - start

    scorer = HFRewardModel(resolve_model(args.model), max_length=args.max_length, precision=args.precision,
                           batch_size=args.batch_size, model=base.model, tokenizer=base.tokenizer)
    judge = RewardModelJudge(scorer)
    start = time.perf_counter()
    asyncio.run(judge.prepare(inputs))
    verdicts = asyncio.run(judge.judge(inputs))
    judge_s = time.perf_counter() - start
    ours = np.array([s for v in verdicts for s in (v.scores or {}).values()])
    tol = 1e-2 if scorer.precision == "bf16" else 1e-5
    diff = float(np.abs(ours - plain).max())
    print(json.dumps({
        "cases": len(cases), "verdicts": len(inputs), "triples": len(triples),
        "unique_triples": len(set(triples)), "precision": scorer.precision, "max_length": args.max_length,
        "batch_size": args.batch_size, "plain_pairs_per_s": len(inputs) / plain_s,
        "judge_pairs_per_s": len(inputs) / judge_s, "speedup": plain_s / judge_s,
        "max_abs_score_diff": diff, "within_tolerance": diff <= tol, "torch_threads": torch.get_num_threads(),
    }, indent=2))


if __name__ == "__main__":
    main()
