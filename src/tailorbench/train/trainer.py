"""The Bradley-Terry training loop of `tailor train-rm`: a plain PyTorch loop (AdamW + a transformers
schedule), chosen over TRL's RewardTrainer because it truncates instead of dropping long rows, at about
RewardTrainer's speed (one forward for chosen and rejected together, length-grouped batches, dropout off,
bf16 autocast with an fp32 head); `freeze_layers` trades the lower layers' training for a shorter backward.
Its loss equals RewardTrainer's on the same batch (tested).

Per pair: loss = -logsigmoid(r_c - r_r - margin) + center_coef * (r_c + r_r)^2 (+ optional length-debias
term). Input encoding, truncation and the head are those of models/reward_hf.py, so the saved checkpoint
scores with `rm:OUT` exactly as it was trained.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import sys
import time
from collections.abc import Sequence
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

notes_log = get_logger(__name__)

METRICS = "metrics.jsonl"
SUMMARY = "summary.json"


def resolve_model(name: str) -> str:
    if name == MINILM:
        from tailorbench.models.encoder_hf import default_encoder_path

        return default_encoder_path()
    return name


def bt_loss(r_chosen: Any, r_rejected: Any, margin: float = 0.0, center_coef: float = 0.0) -> Any:
    """Bradley-Terry loss with margin, plus the reward-centering term (TRL's definition)."""
    import torch

    loss = -torch.nn.functional.logsigmoid(r_chosen - r_rejected - margin).mean()
    if center_coef:
        loss = loss + center_coef * torch.mean((r_chosen + r_rejected) ** 2)
    return loss


def freeze_lower_layers(model: Any, k: int) -> int:
    """Freeze the embeddings and the lowest `k` encoder layers of a BERT-style model (`embeddings` +
    `encoder.layer`); returns the number of frozen parameters. Autograd then records nothing below layer `k`:
    no backward pass and no stored activations there."""
    base = getattr(model, "base_model", model)
    embeddings = getattr(base, "embeddings", None)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if embeddings is None or layers is None:
        raise ConfigError(f"freeze_layers needs a BERT-style encoder (embeddings + encoder.layer); "
                          f"{type(model).__name__} has none")
    if k > len(layers):
        raise ConfigError(f"freeze_layers {k} exceeds the model's {len(layers)} encoder layers")
    frozen = 0
    for module in [embeddings, *list(layers)[:k]]:
        for param in module.parameters():
            param.requires_grad_(False)
            frozen += param.numel()
    return frozen


def length_debias_term(r_chosen: Any, r_rejected: Any, len_c: Any, len_r: Any) -> Any:
    """Squared correlation, within the batch, between the reward margin and the length margin."""
    import torch

    d = r_chosen - r_rejected
    lm = (len_c - len_r).to(d.dtype)
    d, lm = d - d.mean(), lm - lm.mean()
    corr = (d * lm).sum() / torch.sqrt((d * d).sum() * (lm * lm).sum() + 1e-8)
    return corr**2


def grouped_batches(lengths: Sequence[int], batch_size: int, rng: random.Random, group: bool) -> list[list[int]]:
    """Seeded batches of pair indices; with `group`, similar lengths share a batch (megabatches of 50
    batches sorted by length, then the batch order shuffled), so little compute goes to padding."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    if group:
        mega = batch_size * 50
        order = [i for s in range(0, len(order), mega)
                 for i in sorted(order[s : s + mega], key=lambda i: -lengths[i])]
    batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    if group:
        rng.shuffle(batches)
    return batches


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


def tier_table(results: dict[str, Any]) -> dict[str, Any]:
    """{split/tier: {accuracy, balanced_accuracy, n}} from a run's results.json."""
    out: dict[str, Any] = {}
    for split, block in results["metrics"].items():
        if split == "all":
            continue
        for tier, cell in block.items():
            out[f"{split}/{tier}"] = {"n": cell["n"], "accuracy": cell["accuracy"],
                                      "balanced_accuracy": cell["length"]["balanced_accuracy"]}
    cell = results["metrics"]["all"]
    out["all"] = {"n": cell["n"], "accuracy": cell["accuracy"],
                  "balanced_accuracy": cell["length"]["balanced_accuracy"]}
    return out


def evaluate_cases(cases: list[PairCase], judge: Any, spec: str, cfg: RMTrainConfig, out: Path,
                   label: str, benchmark: Benchmark | None = None) -> dict[str, Any]:
    """Per split x tier metrics of a judge on held-out cases, via the evaluation runner (same metrics,
    same run directory layout as `tailor eval`). With `benchmark` (the held-out file, `label` its path) the run
    is exactly what `tailor eval --data LABEL` repeats."""
    from tailorbench.evaluate.results import load_results
    from tailorbench.evaluate.runner import EvalConfig, run_eval

    config = EvalConfig(data=label, judge=spec, setting=cfg.setting, seed=cfg.seed, n_boot=cfg.n_boot)
    if judge is not None:
        judge.spec = spec
    run_eval(config, out, progress=False, benchmark=benchmark or Benchmark(label, "memory", cases), judge=judge)
    return tier_table(load_results(out))


#: the held-out cases of a checkpoint, as native PairCase JSONL (`tailor eval --data` reads it)
HELDOUT = "heldout.jsonl"


def heldout_benchmark(cases: list[PairCase], out: Output) -> tuple[Path, Benchmark]:
    """Write the held-out cases to OUT/eval/heldout.jsonl and load them back as `tailor eval` will."""
    from tailorbench.datasets import load_benchmark, write_native

    path = out.ensure("eval") / HELDOUT
    write_native(cases, path)
    return path, load_benchmark(str(path))


def reproduce_command(cfg: RMTrainConfig, out: Path, data: Path) -> str:
    """The `tailor eval` command that repeats the held-out evaluation of a checkpoint."""
    import shlex

    return (f"tailor eval --data {shlex.quote(str(data))} --judge {shlex.quote(f'rm:{out}')} --setting "
            f"{cfg.setting} --seed {cfg.seed} --n-boot {cfg.n_boot} --out {shlex.quote(str(out / 'eval' / 'rerun'))}")


def train_reward_model(cfg: RMTrainConfig, dest: Output, progress: bool = True) -> dict[str, Any]:
    """Train, evaluate after each epoch, save a checkpoint in `dest` (cfg.out, claimed by the verb before any
    work); returns the summary (summary.json). Nothing is written before the data and the model are read."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_scheduler

    from tailorbench.judges.reward_model import RewardModelJudge
    from tailorbench.models.reward_hf import (
        HFRewardModel,
        RewardFormat,
        ensure_pad_token,
        fp32_head,
        pad_batch,
        write_format,
    )

    cfg.validate()
    started = time.perf_counter()
    out = dest.path()
    if (out / SUMMARY).exists():
        raise ConfigError(f"{out} already holds a trained model; choose another --out")
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)

    train, eval_cases, data_stats = prepare_data(cfg)
    path = resolve_model(cfg.model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load model {cfg.model!r}: {exc}") from exc
    cfg.save(dest, "train_config.yaml")
    # what the model is fitted on, as content hashes: `rm:OUT` reports cases of any data that overlaps them
    training = TrainingContent.of_cases(train, str(out / CONTENT_FILE), setting=cfg.setting, data=cfg.data,
                                        trained_by="tailor train-rm")
    training.write(dest)
    heldout: tuple[Path, Benchmark] | None = heldout_benchmark(eval_cases, dest) if eval_cases else None
    notes = [n for n in [ensure_pad_token(tokenizer, model)] if n]
    if not cfg.dropout:
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
    frozen = freeze_lower_layers(model, cfg.freeze_layers) if cfg.freeze_layers else 0
    model.to(cfg.device)
    head = fp32_head(model)
    if head is None:
        notes.append("no known head name found: the head runs under autocast")

    answers = [a for c in train for a in (c.chosen, c.rejected)]
    log_len = np.log1p(np.array([len(a) for a in answers], dtype=np.float64))
    fmt = RewardFormat(max_length=cfg.max_length, answer_share=cfg.answer_share, question_cap=cfg.question_cap,
                       length_weight=0.0 if cfg.length_feature else None,
                       length_mean=float(log_len.mean()), length_std=float(log_len.std() or 1.0),
                       encoder_score=cfg.train_scope == "full")
    scorer = HFRewardModel(path, precision=cfg.precision, device=cfg.device, model=model, tokenizer=tokenizer,
                           fmt=fmt, batch_size=32)

    triples, pairs = distinct_triples(train, cfg.setting)
    lens_feat = torch.tensor(fmt.length_feature([t[2] for t in triples]))
    feats, feature_fit = None, None
    if cfg.features:
        tick = time.perf_counter()
        feats, feature_fit = features.fit_features(cfg, scorer, triples, pairs)
        feature_fit["seconds"] = time.perf_counter() - tick
    if cfg.train_scope == "full":
        encoded, flags = scorer.encoder.encode(triples)
        truncation = {"unique_inputs": len(triples), "truncated_inputs": int(flags.sum()),
                      "by_segment": dict(scorer.encoder.truncated)}
    else:
        encoded = []
        truncation = {"unique_inputs": len(triples), "truncated_inputs": 0, "by_segment": {},
                      "note": "train_scope features: the encoder's score is not used, nothing is encoded"}

    length_w = torch.nn.Parameter(torch.zeros(())) if cfg.length_feature else None
    feat_w = torch.nn.Parameter(torch.tensor(fmt.feature_weights)) if feats is not None else None
    decay = [p for n, p in model.named_parameters() if p.requires_grad and not _no_decay(n)]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and _no_decay(n)]
    groups: list[dict[str, Any]] = [{"params": decay, "weight_decay": cfg.weight_decay},
                                    {"params": no_decay, "weight_decay": 0.0}]
    if length_w is not None:
        groups.append({"params": [length_w], "weight_decay": 0.0, "lr": cfg.length_lr})
    if feat_w is not None:
        groups.append({"params": [feat_w], "weight_decay": 0.0, "lr": cfg.length_lr})
    # the fused kernel (one pass over all parameters; what transformers' Trainer uses by default on torch >= 2.8)
    optimizer = torch.optim.AdamW(groups, lr=cfg.learning_rate, fused=cfg.device.split(":")[0] in ("cpu", "cuda"))
    pair_len = [max(len(encoded[a]["input_ids"]), len(encoded[b]["input_ids"])) for a, b in pairs] if encoded else []
    per_epoch = math.ceil(math.ceil(len(pairs) / cfg.batch_size) / cfg.grad_accum)
    total = min(per_epoch * cfg.epochs, cfg.max_steps or sys.maxsize) if cfg.train_scope == "full" else 0
    scheduler = get_scheduler(
        "constant_with_warmup" if cfg.scheduler == "constant" else cfg.scheduler, optimizer,
        num_warmup_steps=int(cfg.warmup_ratio * total), num_training_steps=total,
    )
    log = _Log(dest)
    log.write({"event": "start", "config": cfg.to_dict(), "data": data_stats, "truncation": truncation,
               "model_path": path, "precision": scorer.precision, "notes": notes, "feature_fit": feature_fit,
               "frozen_parameters": frozen})
    held_label = str(heldout[0]) if heldout else "held-out users"
    held_bench = heldout[1] if heldout else None
    longer = evaluate_cases(eval_cases, None, "longer", cfg, out / "eval" / "longer", held_label, held_bench) \
        if eval_cases and cfg.eval_each_epoch else None
    if longer:
        log.write({"event": "eval", "epoch": 0, "judge": "longer", "tiers": longer})

    rng = random.Random(cfg.seed)
    bar = _progress(total, progress)
    step, seen_pairs, train_time = 0, 0, 0.0
    step_seconds: list[float] = []  # wall time of each optimizer step (its median resists load spikes)
    evals: list[dict[str, Any]] = []
    window: list[tuple[float, float]] = []
    pad_id = tokenizer.pad_token_id
    for epoch in range(1, cfg.epochs + 1):
        if step >= total and not (epoch == 1 and cfg.train_scope == "features"):
            break
        model.train(cfg.dropout)
        batches = grouped_batches(pair_len, cfg.batch_size, rng, cfg.group_by_length) if total else []
        tick = step_tick = time.perf_counter()
        for k, batch in enumerate(batches):
            idx = [pairs[i][0] for i in batch] + [pairs[i][1] for i in batch]
            rewards = scorer.forward(pad_batch([encoded[i] for i in idx], pad_id))
            if length_w is not None:
                rewards = rewards + length_w * lens_feat[idx].to(rewards.device)
            if feat_w is not None and feats is not None:
                rewards = rewards + feats[idx].to(rewards.device) @ feat_w
            n = len(batch)
            r_c, r_r = rewards[:n], rewards[n:]
            loss = bt_loss(r_c, r_r, cfg.margin, cfg.center_coef)
            if cfg.length_debias:
                loss = loss + cfg.length_debias * length_debias_term(r_c, r_r, lens_feat[idx[:n]], lens_feat[idx[n:]])
            (loss / cfg.grad_accum).backward()
            window.append((loss.item(), (r_c > r_r).float().mean().item()))
            seen_pairs += n
            if (k + 1) % cfg.grad_accum and k + 1 != len(batches):
                continue
            torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], cfg.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            now = time.perf_counter()
            step_seconds.append(now - step_tick)
            step_tick = now
            bar.advance(float(np.mean([w[0] for w in window[-20:]])))
            if step % cfg.log_every == 0 or step == total:
                elapsed = train_time + time.perf_counter() - tick
                log.write({"event": "train", "epoch": epoch, "step": step,
                           "loss": float(np.mean([w[0] for w in window])),
                           "accuracy": float(np.mean([w[1] for w in window])), "lr": scheduler.get_last_lr()[0],
                           "length_weight": length_w.item() if length_w is not None else None,
                           "feature_weights": feat_w.detach().tolist() if feat_w is not None else None,
                           "pairs_per_s": seen_pairs / max(elapsed, 1e-9)})
                window = []
            if step >= total:
                break
        train_time += time.perf_counter() - tick
        if length_w is not None:
            fmt.length_weight = float(length_w.detach())
        if feat_w is not None:
            fmt.feature_weights = feat_w.detach().tolist()
        if eval_cases and cfg.eval_each_epoch:
            model.eval()
            tiers = evaluate_cases(eval_cases, RewardModelJudge(scorer, training), f"rm:{out}", cfg,
                                   out / "eval" / f"epoch-{epoch}", held_label, held_bench)
            evals.append({"epoch": epoch, "tiers": tiers})
            log.write({"event": "eval", "epoch": epoch, "judge": "rm", "tiers": tiers})
            bar.note(f"epoch {epoch}: " + ", ".join(
                f"{k} {100 * (v['accuracy'] or 0):.1f}%" for k, v in tiers.items()))
    cross = None
    if cfg.cross_fit_folds:
        from tailorbench.train.cross_fit import cross_fit

        tick = time.perf_counter()
        assert cfg.data is not None
        every, _ = load_cases(cfg.data, cfg.data_format, cfg.score_column, cfg.min_score_gap)
        held = len({c.user_id for c in eval_cases}) if cfg.eval_data is None else 0  # a split of the same users
        cross = {**cross_fit(cfg, scorer, every, held), "seconds": time.perf_counter() - tick}
        log.write({"event": "cross_fit", **cross})
        bar.note(f"cross-fit over {cross['users']} users ({cfg.cross_fit_folds} folds), rm vs longer: " + ", ".join(
            f"{k} {100 * v['accuracy']:.1f} vs {100 * v['longer']:.1f}" for k, v in cross["tiers"].items()))
        if cfg.research_figures:
            _note_research_figures(bar, cross)
    bar.close()
    model.eval()
    checkpoint = dest.ensure()  # the checkpoint's files sit in the output folder itself (`rm:OUT` loads it)
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    if scorer.ngrams is not None:
        scorer.ngrams.save(dest)
    write_format(dest, fmt, {"trained_by": "tailor train-rm", "setting": cfg.setting, "head": head})
    summary: dict[str, Any] = {
        "out": str(out), "model": cfg.model, "steps": step, "pairs_seen": seen_pairs,
        "train_seconds": train_time, "pairs_per_s": seen_pairs / max(train_time, 1e-9),
        "step_seconds_median": float(np.median(step_seconds)) if step_seconds else None,
        "frozen_parameters": frozen,
        "wall_seconds": time.perf_counter() - started, "precision": scorer.precision,
        "data": data_stats, "truncation": truncation, "format": asdict(fmt), "longer": longer,
        "evals": evals, "notes": notes, "feature_fit": feature_fit, "cross_fit": cross,
    }
    if heldout is not None:
        where = out / "eval" / f"epoch-{evals[-1]['epoch']}" if evals else None
        summary["heldout"] = {"data": str(heldout[0]), "cases": len(eval_cases),
                              "eval_dir": None if where is None else str(where),
                              "command": reproduce_command(cfg, out, heldout[0])}
        bar.note("held-out evaluation (users not trained on): " + (f"{where}/report.md" if where else "not run "
                 "(eval_each_epoch is off)") + f"; reproduce it with:\n  {summary['heldout']['command']}")
    summary["training_content"] = training.summary()
    log.write({"event": "end", **{k: summary[k] for k in ("steps", "pairs_per_s", "wall_seconds")}})
    log.close()
    dest.write_json(SUMMARY, summary)
    return summary


def _note_research_figures(bar: Any, cross: dict[str, Any]) -> None:
    """`research_figures`: the odds of a held-out split of the config's size, and each tier by overlap class."""
    power = cross["split_power"]
    if power:  # how often a held-out split of the config's size would show each tier ahead of `longer`
        bar.note(f"  a random split holding out {power['held_users']} users shows rm ahead of / level with / "
                 "behind longer: " + ", ".join(f"{k} {100 * v['ahead']:.0f}/{100 * v['level']:.0f}/"
                                               f"{100 * v['behind']:.0f}%" for k, v in power["tiers"].items()))
    shared = {t: row for t, row in cross["tiers_by_overlap"].items() if set(row) - {"unique"}}
    for tier, row in shared.items():  # where a tier's figure comes from when other tiers hold its pairs
        bar.note(f"  {tier} by rows shared with other tiers: " + ", ".join(
            f"{k} ({v['n']}) {100 * v['accuracy']:.1f} vs {100 * v['longer']:.1f}" for k, v in row.items()))


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
