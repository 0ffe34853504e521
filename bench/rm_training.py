"""Training speed: `tailor train-rm`'s loop against TRL's RewardTrainer at its fastest (gradient checkpointing
off), same backbone, same training pairs (pre-tokenized by our encoder, so same truncation and nothing dropped),
same max length, batch size, precision and dropout (off), same number of steps. Each side runs in its own
process (peak RSS = its peak memory); both are then scored on the same held-out users with the `rm:` judge.
Goal: >= 1.5x pairs/s, held-out accuracy no worse.

    .venv/bin/python bench/rm_training.py [--steps 20] [--eval-limit 100]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = "../shared/data/personafeedback-general-dev"


def run_ours(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from tailorbench.train.api import train_rm

    summary = train_rm(data=args.data, out=str(out), max_steps=args.steps, batch_size=args.batch_size,
                       max_length=args.max_length, precision=args.precision, eval_each_epoch=False,
                       threads=args.threads, seed=0)
    return {"pairs_per_s": summary["pairs_per_s"], "train_seconds": summary["train_seconds"]}


def run_trl(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    from datasets import Dataset  # type: ignore[import-untyped]
    from tailorbench.models.reward_hf import RewardEncoder, RewardFormat, write_format
    from tailorbench.train.config import RMTrainConfig
    from tailorbench.train.trainer import context_of, prepare_data, resolve_model

    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = RMTrainConfig(data=args.data, out=str(out), max_length=args.max_length, seed=0)
    train, _, _ = prepare_data(cfg)
    path = resolve_model("minilm")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    fmt = RewardFormat(max_length=args.max_length)
    encoder = RewardEncoder(tokenizer, fmt)
    rows = []
    for case in train:
        context = context_of(case, "persona")
        (c, r), _ = encoder.encode([(context, case.question, case.chosen), (context, case.question, case.rejected)])
        rows.append({"chosen_ids": c["input_ids"], "rejected_ids": r["input_ids"]})
    bf16 = args.precision != "fp32"
    config = RewardConfig(output_dir=str(out / "trl"), per_device_train_batch_size=args.batch_size,
                          max_steps=args.steps, learning_rate=5e-5, warmup_steps=max(1, args.steps // 10),
                          bf16=bf16, use_cpu=True,
                          gradient_checkpointing=False, disable_dropout=True, max_length=args.max_length,
                          report_to=[], save_strategy="no", logging_steps=10, seed=0)
    trainer = RewardTrainer(model=model, args=config, train_dataset=Dataset.from_list(rows),
                            processing_class=tokenizer)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    write_format(out, fmt)
    return {"pairs_per_s": args.steps * args.batch_size / seconds, "train_seconds": seconds}


def held_out_accuracy(model_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    from tailorbench.evaluate.runner import sample_cases
    from tailorbench.judges.reward_model import RewardModelJudge
    from tailorbench.models.reward_hf import HFRewardModel
    from tailorbench.train.config import RMTrainConfig
    from tailorbench.train.trainer import evaluate_cases, prepare_data

    cfg = RMTrainConfig(data=args.data, out=str(model_dir), seed=0, n_boot=100)
    _, held, _ = prepare_data(cfg)
    held = sample_cases(held, args.eval_limit, 0)
    judge = RewardModelJudge(HFRewardModel(str(model_dir), precision=args.precision))
    tiers = evaluate_cases(held, judge, f"rm:{model_dir}", cfg, model_dir / "eval", "held-out users")
    return {k: round(v["accuracy"], 4) for k, v in tiers.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--eval-limit", type=int, default=100)
    parser.add_argument("--side", choices=["ours", "trl"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        out = Path(args.out)
        result = run_ours(args, out) if args.side == "ours" else run_trl(args, out)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        result["held_out_accuracy"] = held_out_accuracy(out, args) if args.eval_limit else None
        print("RESULT " + json.dumps(result))
        return
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("ours", "trl"):
            cmd = [sys.executable, __file__, "--side", side, "--out", str(Path(tmp) / side)] + [
                f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("side", "out")]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
            results[side] = json.loads(line[len("RESULT "):])
    results["speedup"] = results["ours"]["pairs_per_s"] / results["trl"]["pairs_per_s"]
    results["memory_ratio"] = results["ours"]["peak_rss_mb"] / results["trl"]["peak_rss_mb"]
    results["settings"] = {k: v for k, v in vars(args).items() if k not in ("side", "out")}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
