"""Training speed: `tailor train-rm` against TRL's RewardTrainer at its fastest (gradient checkpointing off),
all rows measured in one invocation, each as a ratio against the TRL row of the same run. Same backbone
(the shipped all-MiniLM-L6-v2), same training pairs (the cleaned training users of the dev split; for TRL
pre-tokenized by our encoder, so same truncation and nothing dropped), max length 256, bf16, dropout off,
batch 16; every row is then scored by the `rm:` judge on the same held-out cases (held-out users, seeded
`--eval-limit` sample), next to the `longer` baseline on those cases.

Rows (each side in its own process, so peak RSS is that side's peak memory):

- `trl`: RewardTrainer, full fine-tune, `--steps` optimizer steps (default: one epoch of the training pairs).
- `loop`: `tailor train-rm`'s loop, the like-for-like full fine-tune: the same steps, batch and schedule.
- `freeze`: the same loop with `freeze_layers: K` (embeddings + lowest K layers frozen: no backward there).
- `shipped`: `tailor train-rm --config configs/rm-minilm-cpu.yaml` (feature head: MiniLM features of each
  distinct training input + a Bradley-Terry fit of 3 weights); pairs/s = training pairs (one epoch's worth) /
  wall time of the whole `train_rm` call (data, model load, feature extraction, fit, save; its evaluations —
  per epoch and the config's `cross_fit_folds` — are switched off, as TRL runs none).

For the fine-tune rows pairs/s = pairs trained / training time; `median step` gives the rate from the median
optimizer-step time too (robust to a load spike on the shared machine). The 1-minute load average is sampled
at the start and end of each side. Against load drift, TRL runs first and again last (timing only), and every
ratio is taken against the mean of its two runs.

    flock /tmp/tailor-cpu.lock .venv/bin/python perf/rm_training.py [--steps 20] [--eval-limit 200]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = "../shared/data/personafeedback-general-dev"
SHIPPED = str(Path(__file__).resolve().parent.parent / "configs" / "rm-minilm-cpu.yaml")
SIDES = ("trl", "loop", "freeze", "shipped")


def run_loop(args: argparse.Namespace, out: Path, freeze: int) -> dict[str, Any]:
    from tailorbench.train.api import train_rm

    summary = train_rm(data=args.data, out=str(out), max_steps=args.steps, batch_size=args.batch_size,
                       max_length=args.max_length, precision=args.precision, eval_each_epoch=False,
                       threads=args.threads, freeze_layers=freeze, seed=0)
    return {"pairs": summary["pairs_seen"], "steps": summary["steps"], "train_seconds": summary["train_seconds"],
            "pairs_per_s": summary["pairs_per_s"], "wall_seconds": summary["wall_seconds"],
            "median_step_pairs_per_s": args.batch_size / summary["step_seconds_median"],
            "frozen_parameters": summary["frozen_parameters"]}


def run_shipped(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from tailorbench.train.api import train_rm

    start = time.perf_counter()
    # evaluation is not training: neither the per-epoch evaluation nor the config's cross-fit is timed
    summary = train_rm(SHIPPED, data=args.data, out=str(out), eval_each_epoch=False, cross_fit_folds=0,
                       threads=args.threads)
    wall = time.perf_counter() - start
    pairs = summary["data"]["train_pairs"]
    return {"pairs": pairs, "steps": 0, "wall_seconds": wall, "pairs_per_s": pairs / wall,
            "feature_fit_seconds": summary["feature_fit"]["seconds"],
            "feature_fit_train_accuracy": summary["feature_fit"]["train_accuracy"]}


def run_trl(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainerCallback
    from trl import RewardConfig, RewardTrainer

    from datasets import Dataset  # type: ignore[import-untyped]
    from tailorbench.models.reward_hf import RewardEncoder, RewardFormat, write_format
    from tailorbench.train.config import RMTrainConfig
    from tailorbench.train.data import context_of
    from tailorbench.train.trainer import prepare_data, resolve_model

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
    steps = args.steps or -(-len(rows) // args.batch_size)

    class StepTimes(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.tick = 0.0

        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.tick = time.perf_counter()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            self.times.append(time.perf_counter() - self.tick)

    config = RewardConfig(output_dir=str(out / "trl"), per_device_train_batch_size=args.batch_size,
                          max_steps=steps, learning_rate=5e-5, warmup_steps=max(1, steps // 10),
                          bf16=args.precision != "fp32", use_cpu=True,
                          gradient_checkpointing=False, disable_dropout=True, max_length=args.max_length,
                          report_to=[], save_strategy="no", logging_steps=10, seed=0,
                          disable_tqdm=True)
    timer = StepTimes()
    trainer = RewardTrainer(model=model, args=config, train_dataset=Dataset.from_list(rows),
                            processing_class=tokenizer, callbacks=[timer])
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    write_format(out, fmt)
    times = sorted(timer.times)
    epoch_steps = -(-len(rows) // args.batch_size)
    full, part = divmod(steps, epoch_steps)  # pairs actually trained (an epoch's last batch is smaller)
    pairs = full * len(rows) + min(part * args.batch_size, len(rows))
    return {"pairs": pairs, "steps": steps, "train_seconds": seconds, "pairs_per_s": pairs / seconds,
            "median_step_pairs_per_s": args.batch_size / times[len(times) // 2] if times else None}


def held_out_accuracy(model_dir: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    """Per-tier accuracy (and length-balanced accuracy of `all`) on the same seeded held-out sample for
    every row; `model_dir` None: the `longer` baseline."""
    from tailorbench.evaluate.runner import sample_cases
    from tailorbench.judges.reward_model import RewardModelJudge
    from tailorbench.models.reward_hf import HFRewardModel
    from tailorbench.train.config import RMTrainConfig
    from tailorbench.train.trainer import evaluate_cases, prepare_data

    out = model_dir or Path(args.out)
    cfg = RMTrainConfig(data=args.data, out=str(out), seed=0, n_boot=100)
    _, held, _ = prepare_data(cfg)
    held = sample_cases(held, args.eval_limit, 0)
    if model_dir is None:
        tiers = evaluate_cases(held, None, "longer", cfg, out / "eval-longer", "held-out users")
    else:
        judge = RewardModelJudge(HFRewardModel(str(model_dir), precision=args.precision))
        tiers = evaluate_cases(held, judge, f"rm:{model_dir}", cfg, model_dir / "eval", "held-out users")
    result = {k: round(v["accuracy"], 4) for k, v in tiers.items()}
    result["all_balanced"] = round(tiers["all"]["balanced_accuracy"], 4)
    result["n"] = tiers["all"]["n"]
    return result


def load() -> float:
    return round(os.getloadavg()[0], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps (default: one epoch)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--freeze-layers", type=int, default=4, help="K for the `freeze` row")
    parser.add_argument("--eval-limit", type=int, default=200, help="held-out cases per row (seeded, same)")
    parser.add_argument("--sides", default="trl,loop,freeze,shipped,trl",
                        help="rows to run, in this order; a repeated row is timed again (no evaluation), and "
                             "the TRL reference is the mean of its runs (default: TRL first and last)")
    parser.add_argument("--side", choices=[*SIDES, "longer"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        out = Path(args.out)
        load_start = load()
        if args.side == "longer":
            print("RESULT " + json.dumps({"held_out_accuracy": held_out_accuracy(None, args)}))
            return
        if args.side == "trl":
            result = run_trl(args, out)
        elif args.side == "shipped":
            result = run_shipped(args, out)
        else:
            result = run_loop(args, out, args.freeze_layers if args.side == "freeze" else 0)
        result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        result["load_start"], result["load_end"] = load_start, load()
        result["held_out_accuracy"] = held_out_accuracy(out, args) if args.eval_limit else None
        print("RESULT " + json.dumps(result))
        return
    results: dict[str, Any] = {}
    sides = [s for s in args.sides.split(",") if s]
    keys: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for side in [*sides, "longer"] if args.eval_limit else sides:
            key = side if side not in keys else f"{side}_{keys.count(side) + 1}"
            settings = {**vars(args), "eval_limit": args.eval_limit if key == side else 0}  # a repeat: timing only
            cmd = [sys.executable, __file__, "--side", side, "--out", str(Path(tmp) / key)] + [
                f"--{k.replace('_', '-')}={v}" for k, v in settings.items()
                if k not in ("side", "out") and v is not None]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                sys.exit(f"{side} failed:\n{proc.stderr[-4000:]}")
            line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
            results[key] = json.loads(line[len("RESULT "):])
            keys.append(side)
            print(key, json.dumps(results[key]), file=sys.stderr, flush=True)
    trl_runs = [v for k, v in results.items() if k == "trl" or k.startswith("trl_")]
    if trl_runs:
        # the reference: the mean over the TRL runs (default: one first, one last, bracketing the others)
        trl = {name: float(sum(r[name] for r in trl_runs) / len(trl_runs))
               for name in ("pairs_per_s", "median_step_pairs_per_s", "peak_rss_mb")}
        results["trl_reference"] = {"runs": len(trl_runs), **trl}
        for key, row in results.items():
            if key.startswith("trl") or key == "longer":
                continue
            row["speedup_vs_trl"] = round(row["pairs_per_s"] / trl["pairs_per_s"], 3)
            if row.get("median_step_pairs_per_s"):
                row["median_step_speedup_vs_trl"] = round(
                    row["median_step_pairs_per_s"] / trl["median_step_pairs_per_s"], 3)
            row["memory_ratio_vs_trl"] = round(row["peak_rss_mb"] / trl["peak_rss_mb"], 3)
    results["settings"] = {k: v for k, v in vars(args).items() if k not in ("side", "out")}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
