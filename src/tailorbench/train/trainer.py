"""The Bradley-Terry training loop of `tailor train-rm`: a plain PyTorch loop (AdamW + a transformers
schedule), chosen over TRL's RewardTrainer because it truncates instead of dropping long rows, at about
RewardTrainer's speed (one forward for chosen and rejected together, length-grouped batches, dropout off,
bf16 autocast with an fp32 head); `freeze_layers` trades the lower layers' training for a shorter backward.
Its loss equals RewardTrainer's on the same batch (tested).

Per pair: loss = -logsigmoid(r_c - r_r - margin) + center_coef * (r_c + r_r)^2 (+ optional length-debias
term; `train/loss.py`). The loop is `RewardModelTrainer`, in TRL's shape (setup / training step / optimizer step
/ evaluate / save, each an overridable method); its held-out evaluation is `train/heldout.py`. Input encoding,
truncation and the head are those of models/reward_hf.py, so the saved checkpoint scores with `rm:OUT` exactly
as it was trained.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.datasets import Benchmark
from tailorbench.errors import ConfigError
from tailorbench.files import Output
from tailorbench.leakage import CONTENT_FILE, TrainingContent
from tailorbench.logs import get_logger
from tailorbench.schema import PairCase
from tailorbench.train import features
from tailorbench.train.config import MINILM, RMTrainConfig
from tailorbench.train.data import distinct_triples, load_cases, prepare_data
from tailorbench.train.heldout import evaluate_cases, heldout_benchmark, reproduce_command
from tailorbench.train.loss import bt_loss, freeze_lower_layers, grouped_batches, length_debias_term

notes_log = get_logger(__name__)

METRICS = "metrics.jsonl"
SUMMARY = "summary.json"


def resolve_model(name: str) -> str:
    if name == MINILM:
        from tailorbench.models.encoder_hf import default_encoder_path

        return default_encoder_path()
    return name


class _Log:
    """The run's metrics.jsonl in its output, appended a flushed line at a time (a killed run keeps its lines)."""

    def __init__(self, out: Output) -> None:
        self._open = contextlib.ExitStack()
        self.handle = self._open.enter_context(out.appending(METRICS))

    def write(self, record: dict[str, Any]) -> None:
        self.handle.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        self.handle.flush()

    def close(self) -> None:
        self._open.close()


def train_reward_model(cfg: RMTrainConfig, dest: Output, progress: bool = True) -> dict[str, Any]:
    """Train, evaluate after each epoch, save a checkpoint in `dest` (cfg.out, claimed by the verb before any
    work); returns the summary (summary.json). Nothing is written before the data and the model are read."""
    return RewardModelTrainer(cfg, dest, progress).train()


class RewardModelTrainer:
    """The Bradley-Terry trainer, in TRL's shape: `train()` runs `setup()`, then per epoch `train_epoch()` (a
    `training_step()` per batch, its loss from `compute_loss()`, and an `optimizer_step()` every `grad_accum`
    batches) followed by `evaluate()`, then `cross_fit()`, `save()` and `finish()`. Each is a method a subclass
    may override; the state they share is the attributes `setup()` fills."""

    model: Any
    tokenizer: Any
    scorer: Any
    fmt: Any
    head: str | None
    training: TrainingContent
    train_cases: list[PairCase]
    eval_cases: list[PairCase]
    data_stats: dict[str, Any]
    model_path: str
    notes: list[str]
    frozen: int
    heldout: tuple[Path, Benchmark] | None
    pairs: list[tuple[int, int]]
    encoded: Any
    truncation: dict[str, Any]
    lens_feat: Any
    feats: Any
    feature_fit: dict[str, Any] | None
    length_w: Any
    feat_w: Any
    groups: list[dict[str, Any]]
    optimizer: Any
    scheduler: Any
    pair_len: list[int]
    total: int
    log: _Log
    longer: dict[str, Any] | None

    def __init__(self, cfg: RMTrainConfig, dest: Output, progress: bool = True) -> None:
        self.cfg, self.dest, self.progress = cfg, dest, progress
        self.global_step, self.seen_pairs, self.train_time = 0, 0, 0.0
        self.step_seconds: list[float] = []  # wall time of each optimizer step (its median resists load spikes)
        self.evals: list[dict[str, Any]] = []
        self.window: list[tuple[float, float]] = []

    # -- the run ------------------------------------------------------------------------------------------------

    def train(self) -> dict[str, Any]:
        """The whole run: setup, the epochs (each followed by its evaluation), cross-fitting, the checkpoint."""
        cfg = self.cfg
        self.setup()
        for epoch in range(1, cfg.epochs + 1):
            if self.global_step >= self.total and not (epoch == 1 and cfg.train_scope == "features"):
                break
            self.train_epoch(epoch)
            if self.eval_cases and cfg.eval_each_epoch:
                self.evaluate(epoch)
        cross = self.cross_fit() if cfg.cross_fit_folds else None
        self.bar.close()
        self.save()
        return self.finish(cross)

    # -- setup --------------------------------------------------------------------------------------------------

    def setup(self) -> None:
        """Seeds, data, model, input format, encoded pairs, optimizer and schedule, the metrics log and the
        `longer` baseline; nothing is written before the data and the model are read."""
        cfg = self.cfg
        cfg.validate()
        self.started = time.perf_counter()
        self.out = self.dest.path()
        if (self.out / SUMMARY).exists():
            raise ConfigError(f"{self.out} already holds a trained model; choose another --out")
        self.seed()
        self.train_cases, self.eval_cases, self.data_stats = prepare_data(cfg)
        self.load_model()
        self.record_data()
        self.prepare_model()
        self.make_scorer()
        self.encode()
        self.make_optimizer()
        self.start_log()
        self.rng = random.Random(cfg.seed)
        self.bar = _progress(self.total, self.progress)

    def seed(self) -> None:
        import torch

        random.seed(self.cfg.seed)
        np.random.seed(self.cfg.seed)
        torch.manual_seed(self.cfg.seed)
        if self.cfg.threads:
            torch.set_num_threads(self.cfg.threads)

    def load_model(self) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model_path = resolve_model(self.cfg.model)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
            self.model = AutoModelForSequenceClassification.from_pretrained(self.model_path, num_labels=1)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load model {self.cfg.model!r}: {exc}") from exc

    def record_data(self) -> None:
        """The config, what the model is fitted on (as content hashes: `rm:OUT` reports cases of any data that
        overlaps them) and the held-out cases, written into the output."""
        cfg, dest = self.cfg, self.dest
        cfg.save(dest, "train_config.yaml")
        self.training = TrainingContent.of_cases(self.train_cases, str(self.out / CONTENT_FILE), setting=cfg.setting,
                                                 data=cfg.data, trained_by="tailor train-rm")
        self.training.write(dest)
        self.heldout = heldout_benchmark(self.eval_cases, dest) if self.eval_cases else None

    def prepare_model(self) -> None:
        """Pad token, dropout off (unless asked for), the frozen lower layers, the device and the fp32 head."""
        import torch

        from tailorbench.models.reward_hf import ensure_pad_token, fp32_head

        cfg, model = self.cfg, self.model
        self.notes = [n for n in [ensure_pad_token(self.tokenizer, model)] if n]
        if not cfg.dropout:
            for module in model.modules():
                if isinstance(module, torch.nn.Dropout):
                    module.p = 0.0
        self.frozen = freeze_lower_layers(model, cfg.freeze_layers) if cfg.freeze_layers else 0
        model.to(cfg.device)
        self.head = fp32_head(model)
        if self.head is None:
            self.notes.append("no known head name found: the head runs under autocast")

    def make_scorer(self) -> None:
        """The input format (length statistics of the training answers) and the scorer `rm:OUT` will use."""
        from tailorbench.models.reward_format import RewardFormat
        from tailorbench.models.reward_hf import HFRewardModel

        cfg = self.cfg
        answers = [a for c in self.train_cases for a in (c.chosen, c.rejected)]
        log_len = np.log1p(np.array([len(a) for a in answers], dtype=np.float64))
        self.fmt = RewardFormat(max_length=cfg.max_length, answer_share=cfg.answer_share,
                                question_cap=cfg.question_cap,
                                length_weight=0.0 if cfg.length_feature else None,
                                length_mean=float(log_len.mean()), length_std=float(log_len.std() or 1.0),
                                encoder_score=cfg.train_scope == "full")
        self.scorer = HFRewardModel(self.model_path, precision=cfg.precision, device=cfg.device, model=self.model,
                                    tokenizer=self.tokenizer, fmt=self.fmt, batch_size=32)

    def encode(self) -> None:
        """The distinct (context, question, answer) inputs, their length feature, the fitted features (with
        `features`) and, for `train_scope full`, their encoding."""
        import torch

        cfg, scorer = self.cfg, self.scorer
        triples, self.pairs = distinct_triples(self.train_cases, cfg.setting)
        self.lens_feat = torch.tensor(self.fmt.length_feature([t[2] for t in triples]))
        self.feats, self.feature_fit = None, None
        if cfg.features:
            tick = time.perf_counter()
            self.feats, self.feature_fit = features.fit_features(cfg, scorer, triples, self.pairs)
            self.feature_fit["seconds"] = time.perf_counter() - tick
        if cfg.train_scope == "full":
            self.encoded, flags = scorer.encoder.encode(triples)
            self.truncation = {"unique_inputs": len(triples), "truncated_inputs": int(flags.sum()),
                               "by_segment": dict(scorer.encoder.truncated)}
        else:
            self.encoded = []
            self.truncation = {"unique_inputs": len(triples), "truncated_inputs": 0, "by_segment": {},
                               "note": "train_scope features: the encoder's score is not used, nothing is encoded"}

    def make_optimizer(self) -> None:
        """AdamW over the model (no decay on biases and norms) and the length / feature weights, and the
        learning-rate schedule over the run's steps."""
        import torch
        from transformers import get_scheduler

        cfg, model = self.cfg, self.model
        self.length_w = torch.nn.Parameter(torch.zeros(())) if cfg.length_feature else None
        self.feat_w = torch.nn.Parameter(torch.tensor(self.fmt.feature_weights)) if self.feats is not None else None
        decay = [p for n, p in model.named_parameters() if p.requires_grad and not _no_decay(n)]
        no_decay = [p for n, p in model.named_parameters() if p.requires_grad and _no_decay(n)]
        self.groups = [{"params": decay, "weight_decay": cfg.weight_decay},
                       {"params": no_decay, "weight_decay": 0.0}]
        for extra in (self.length_w, self.feat_w):
            if extra is not None:
                self.groups.append({"params": [extra], "weight_decay": 0.0, "lr": cfg.length_lr})
        # the fused kernel (one pass over all parameters; what transformers' Trainer uses by default on torch >= 2.8)
        self.optimizer = torch.optim.AdamW(self.groups, lr=cfg.learning_rate,
                                           fused=cfg.device.split(":")[0] in ("cpu", "cuda"))
        encoded = self.encoded
        self.pair_len = [max(len(encoded[a]["input_ids"]), len(encoded[b]["input_ids"]))
                         for a, b in self.pairs] if encoded else []
        per_epoch = math.ceil(math.ceil(len(self.pairs) / cfg.batch_size) / cfg.grad_accum)
        self.total = min(per_epoch * cfg.epochs, cfg.max_steps or sys.maxsize) if cfg.train_scope == "full" else 0
        self.scheduler = get_scheduler(
            "constant_with_warmup" if cfg.scheduler == "constant" else cfg.scheduler, self.optimizer,
            num_warmup_steps=int(cfg.warmup_ratio * self.total), num_training_steps=self.total,
        )

    def start_log(self) -> None:
        """metrics.jsonl's start line and, with per-epoch evaluation, the `longer` baseline as epoch 0."""
        cfg = self.cfg
        self.log = _Log(self.dest)
        self.log.write({"event": "start", "config": cfg.to_dict(), "data": self.data_stats,
                        "truncation": self.truncation, "model_path": self.model_path,
                        "precision": self.scorer.precision, "notes": self.notes, "feature_fit": self.feature_fit,
                        "frozen_parameters": self.frozen})
        self.held_label = str(self.heldout[0]) if self.heldout else "held-out users"
        self.held_bench = self.heldout[1] if self.heldout else None
        self.longer = evaluate_cases(self.eval_cases, None, "longer", cfg, self.out / "eval" / "longer",
                                     self.held_label, self.held_bench) \
            if self.eval_cases and cfg.eval_each_epoch else None
        if self.longer:
            self.log.write({"event": "eval", "epoch": 0, "judge": "longer", "tiers": self.longer})

    # -- training -----------------------------------------------------------------------------------------------

    def train_epoch(self, epoch: int) -> None:
        """One pass over the length-grouped batches (or fewer, at `max_steps`); the learned weights go into the
        input format after it."""
        cfg = self.cfg
        self.model.train(cfg.dropout)
        batches = grouped_batches(self.pair_len, cfg.batch_size, self.rng, cfg.group_by_length) if self.total else []
        self.epoch_tick = self.step_tick = time.perf_counter()
        for k, batch in enumerate(batches):
            self.training_step(batch)
            if (k + 1) % cfg.grad_accum and k + 1 != len(batches):
                continue
            self.optimizer_step(epoch)
            if self.global_step >= self.total:
                break
        self.train_time += time.perf_counter() - self.epoch_tick
        if self.length_w is not None:
            self.fmt.length_weight = float(self.length_w.detach())
        if self.feat_w is not None:
            self.fmt.feature_weights = self.feat_w.detach().tolist()

    def rewards(self, idx: list[int]) -> Any:
        """The rewards of the inputs `idx`: the encoder's score plus the length and feature terms."""
        from tailorbench.models.reward_encoding import pad_batch

        rewards = self.scorer.forward(pad_batch([self.encoded[i] for i in idx], self.tokenizer.pad_token_id))
        if self.length_w is not None:
            rewards = rewards + self.length_w * self.lens_feat[idx].to(rewards.device)
        if self.feat_w is not None and self.feats is not None:
            rewards = rewards + self.feats[idx].to(rewards.device) @ self.feat_w
        return rewards

    def compute_loss(self, idx: list[int], n: int) -> tuple[Any, Any, Any]:
        """The batch's loss and the chosen and rejected rewards (`idx`: the n chosen inputs, then the n
        rejected)."""
        cfg = self.cfg
        rewards = self.rewards(idx)
        r_c, r_r = rewards[:n], rewards[n:]
        loss = bt_loss(r_c, r_r, cfg.margin, cfg.center_coef)
        if cfg.length_debias:
            loss = loss + cfg.length_debias * length_debias_term(r_c, r_r, self.lens_feat[idx[:n]],
                                                                 self.lens_feat[idx[n:]])
        return loss, r_c, r_r

    def training_step(self, batch: list[int]) -> None:
        """Forward and backward of one batch of pairs; its loss and accuracy join the logging window."""
        pairs, n = self.pairs, len(batch)
        idx = [pairs[i][0] for i in batch] + [pairs[i][1] for i in batch]
        loss, r_c, r_r = self.compute_loss(idx, n)
        (loss / self.cfg.grad_accum).backward()
        self.window.append((loss.item(), (r_c > r_r).float().mean().item()))
        self.seen_pairs += n

    def optimizer_step(self, epoch: int) -> None:
        """Clip, step the optimizer and the schedule, advance the bar; a train line every `log_every` steps."""
        import torch

        cfg = self.cfg
        torch.nn.utils.clip_grad_norm_([p for g in self.groups for p in g["params"]], cfg.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.global_step += 1
        now = time.perf_counter()
        self.step_seconds.append(now - self.step_tick)
        self.step_tick = now
        self.bar.advance(float(np.mean([w[0] for w in self.window[-20:]])))
        if self.global_step % cfg.log_every == 0 or self.global_step == self.total:
            self.log_train(epoch)

    def log_train(self, epoch: int) -> None:
        """A train line of metrics.jsonl: the window's mean loss and accuracy, then a new window."""
        length_w, feat_w, window = self.length_w, self.feat_w, self.window
        elapsed = self.train_time + time.perf_counter() - self.epoch_tick
        self.log.write({"event": "train", "epoch": epoch, "step": self.global_step,
                        "loss": float(np.mean([w[0] for w in window])),
                        "accuracy": float(np.mean([w[1] for w in window])), "lr": self.scheduler.get_last_lr()[0],
                        "length_weight": length_w.item() if length_w is not None else None,
                        "feature_weights": feat_w.detach().tolist() if feat_w is not None else None,
                        "pairs_per_s": self.seen_pairs / max(elapsed, 1e-9)})
        self.window = []

    # -- evaluation, cross-fitting, saving ----------------------------------------------------------------------

    def evaluate(self, epoch: int) -> dict[str, Any]:
        """The in-memory model as an `rm:` judge on the held-out cases, through the evaluation runner."""
        from tailorbench.judges.reward_model import RewardModelJudge

        self.model.eval()
        tiers = evaluate_cases(self.eval_cases, RewardModelJudge(self.scorer, self.training), f"rm:{self.out}",
                               self.cfg, self.out / "eval" / f"epoch-{epoch}", self.held_label, self.held_bench)
        self.evals.append({"epoch": epoch, "tiers": tiers})
        self.log.write({"event": "eval", "epoch": epoch, "judge": "rm", "tiers": tiers})
        self.bar.note(f"epoch {epoch}: " + ", ".join(
            f"{k} {100 * (v['accuracy'] or 0):.1f}%" for k, v in tiers.items()))
        return tiers

    def cross_fit(self) -> dict[str, Any]:
        """`cross_fit_folds`: the feature-head recipe scored on every user by k-fold cross-fitting."""
        from tailorbench.train.cross_fit import cross_fit, note_research_figures

        cfg = self.cfg
        tick = time.perf_counter()
        assert cfg.data is not None
        every, _ = load_cases(cfg.data, cfg.data_format, cfg.score_column, cfg.min_score_gap)
        # a split of the same users
        held = len({c.user_id for c in self.eval_cases}) if cfg.eval_data is None else 0
        cross = {**cross_fit(cfg, self.scorer, every, held), "seconds": time.perf_counter() - tick}
        self.log.write({"event": "cross_fit", **cross})
        self.bar.note(f"cross-fit over {cross['users']} users ({cfg.cross_fit_folds} folds), rm vs longer: " +
                      ", ".join(f"{k} {100 * v['accuracy']:.1f} vs {100 * v['longer']:.1f}"
                                for k, v in cross["tiers"].items()))
        if cfg.research_figures:
            note_research_figures(self.bar, cross)
        return cross

    def save(self) -> None:
        """The checkpoint in the output folder itself (`rm:OUT` loads it): model, tokenizer, n-gram head,
        input format."""
        from tailorbench.models.reward_format import write_format

        dest = self.dest
        self.model.eval()
        checkpoint = dest.ensure()
        self.model.save_pretrained(checkpoint)
        self.tokenizer.save_pretrained(checkpoint)
        if self.scorer.ngrams is not None:
            self.scorer.ngrams.save(dest)
        write_format(dest, self.fmt, {"trained_by": "tailor train-rm", "setting": self.cfg.setting, "head": self.head})

    def finish(self, cross: dict[str, Any] | None) -> dict[str, Any]:
        """summary.json (returned) and metrics.jsonl's end line."""
        cfg, out, step_seconds = self.cfg, self.out, self.step_seconds
        summary: dict[str, Any] = {
            "out": str(out), "model": cfg.model, "steps": self.global_step, "pairs_seen": self.seen_pairs,
            "train_seconds": self.train_time, "pairs_per_s": self.seen_pairs / max(self.train_time, 1e-9),
            "step_seconds_median": float(np.median(step_seconds)) if step_seconds else None,
            "frozen_parameters": self.frozen,
            "wall_seconds": time.perf_counter() - self.started, "precision": self.scorer.precision,
            "data": self.data_stats, "truncation": self.truncation, "format": asdict(self.fmt),
            "longer": self.longer, "evals": self.evals, "notes": self.notes, "feature_fit": self.feature_fit,
            "cross_fit": cross,
        }
        if self.heldout is not None:
            summary["heldout"] = self.heldout_summary(self.heldout[0])
        summary["training_content"] = self.training.summary()
        self.log.write({"event": "end", **{k: summary[k] for k in ("steps", "pairs_per_s", "wall_seconds")}})
        self.log.close()
        self.dest.write_json(SUMMARY, summary)
        return summary

    def heldout_summary(self, data: Path) -> dict[str, Any]:
        """Where the last held-out evaluation is and the `tailor eval` command that repeats it."""
        out, evals = self.out, self.evals
        where = out / "eval" / f"epoch-{evals[-1]['epoch']}" if evals else None
        block = {"data": str(data), "cases": len(self.eval_cases), "eval_dir": None if where is None else str(where),
                 "command": reproduce_command(self.cfg, out, data)}
        self.bar.note("held-out evaluation (users not trained on): " + (f"{where}/report.md" if where else "not run "
                      "(eval_each_epoch is off)") + f"; reproduce it with:\n  {block['command']}")
        return block


def _no_decay(name: str) -> bool:
    return name.endswith(".bias") or "LayerNorm" in name or "layer_norm" in name or "norm.weight" in name


class _progress:
    """A rich progress bar on stderr with the running loss. Notes are part of the progress display: printed with
    the bar, as plain lines when asked for progress without steps (train_scope features: no bar would stop), and
    INFO records of the logger when progress is off (`tailor train-rm --no-progress` shows them, Python not)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.requested = enabled
        self.enabled = enabled and total > 0
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.console = Console(stderr=True)
        self._bar = Progress(TextColumn("train-rm"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("loss {task.fields[loss]}"), TimeRemainingColumn(), console=self.console)
        self._task = self._bar.add_task("train", total=total, loss="-")
        self._bar.start()

    def advance(self, loss: float) -> None:
        if self.enabled:
            self._bar.update(self._task, advance=1, loss=f"{loss:.4f}")

    def note(self, text: str) -> None:
        if self.enabled:
            self._bar.console.print(text)
        elif self.requested:
            sys.stderr.write(text + "\n")
        else:
            notes_log.info(text)

    def close(self) -> None:
        if self.enabled:
            self._bar.stop()
