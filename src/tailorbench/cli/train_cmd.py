"""`tailor train-rm`: Bradley-Terry reward-model training; the checkpoint it writes is a judge (`rm:OUT`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import print_json, user_errors


def train_rm_command(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML file of RMTrainConfig fields"),
    data: str | None = typer.Option(None, "--data", "-d", help="benchmark dir/file, PairCase JSONL, or scored JSONL"),
    out: str | None = typer.Option(None, "--out", "-o", help="output directory (the checkpoint)"),
    model: str | None = typer.Option(None, help="starting checkpoint, hub id, or `minilm`"),
    eval_data: str | None = typer.Option(None, help="separate evaluation benchmark (else users are held out)"),
    eval_fraction: float | None = typer.Option(None, help="share of users held out for evaluation"),
    n_folds: int | None = typer.Option(None, help="user folds for cross-validation (0: none)"),
    fold: int | None = typer.Option(None, help="the held-out fold"),
    setting: str | None = typer.Option(None, help="persona | none"),
    max_length: int | None = typer.Option(None, help="tokens per input"),
    learning_rate: float | None = typer.Option(None, "--lr", help="peak learning rate"),
    scheduler: str | None = typer.Option(None, help="linear | cosine | constant"),
    warmup_ratio: float | None = typer.Option(None, help="share of steps spent warming up"),
    batch_size: int | None = typer.Option(None, help="pairs per forward pass"),
    grad_accum: int | None = typer.Option(None, help="forward passes per optimizer step"),
    epochs: int | None = typer.Option(None, help="passes over the training pairs"),
    max_steps: int | None = typer.Option(None, help="stop after this many optimizer steps"),
    weight_decay: float | None = typer.Option(None, help="AdamW weight decay"),
    margin: float | None = typer.Option(None, help="Bradley-Terry margin"),
    center_coef: float | None = typer.Option(None, help="reward-centering coefficient (0: off)"),
    length_feature: bool | None = typer.Option(None, "--length-feature/--no-length-feature",
                                               help="learned log-length term in the reward"),
    length_debias: float | None = typer.Option(None, help="penalty on corr(reward margin, length margin)^2"),
    features: str | None = typer.Option(None, help="answer features with learned weights, comma-separated "
                                                   "(e.g. length,persona_overlap,persona_cosine)"),
    feature_l2: float | None = typer.Option(None, help="L2 penalty on the feature weights"),
    train_scope: str | None = typer.Option(None, help="full (fine-tune the encoder) | features (feature fit only)"),
    freeze_layers: int | None = typer.Option(None, help="train_scope full: freeze the embeddings and the lowest K "
                                                        "encoder layers"),
    ngram_range: str | None = typer.Option(None, help="answer_ngrams: character n-gram sizes LO-HI (e.g. 1-3)"),
    ngram_l2: float | None = typer.Option(None, help="answer_ngrams: L2 penalty on the n-gram weights"),
    cross_fit_folds: int | None = typer.Option(None, help="train_scope features: also score the recipe on every "
                                                          "user by K-fold cross-fitting (0: off)"),
    max_train_pairs: int | None = typer.Option(None, help="a seeded sample of this many training pairs"),
    flip_rule: str | None = typer.Option(None, help="pairs seen with both labels: majority | drop | keep | easier "
                                                    "| harder"),
    seed: int | None = typer.Option(None, help="seed of the split, sampling, batches and head init"),
    precision: str | None = typer.Option(None, help="auto | bf16 | fp32"),
    dropout: bool | None = typer.Option(None, "--dropout/--no-dropout", help="keep the model's dropout"),
    threads: int | None = typer.Option(None, help="torch threads"),
    progress: bool = typer.Option(True, help="progress bar on stderr"),
    json_out: bool = typer.Option(False, "--json", help="print the summary as JSON"),
) -> None:
    """Train a Bradley-Terry reward model on personalized preference pairs."""
    from tailorbench.train.api import train_rm

    overrides = {
        "data": data, "out": out, "model": model, "eval_data": eval_data, "eval_fraction": eval_fraction,
        "n_folds": n_folds, "fold": fold, "setting": setting, "max_length": max_length,
        "learning_rate": learning_rate, "scheduler": scheduler, "warmup_ratio": warmup_ratio,
        "batch_size": batch_size, "grad_accum": grad_accum, "epochs": epochs, "max_steps": max_steps,
        "weight_decay": weight_decay, "margin": margin, "center_coef": center_coef,
        "length_feature": length_feature, "length_debias": length_debias, "max_train_pairs": max_train_pairs,
        "flip_rule": flip_rule, "seed": seed, "precision": precision, "dropout": dropout, "threads": threads,
        "features": [f.strip() for f in features.split(",") if f.strip()] if features is not None else None,
        "feature_l2": feature_l2, "train_scope": train_scope, "ngram_l2": ngram_l2,
        "freeze_layers": freeze_layers, "cross_fit_folds": cross_fit_folds,
        "ngram_range": _ngram_range(ngram_range),
    }
    with user_errors():
        summary = train_rm(config, progress=progress, **overrides)
    if json_out:
        print_json(summary)
    else:
        typer.echo(f"{done_line(summary)} in {summary['wall_seconds']:.0f} s -> {summary['out']} "
                   f"(judge: rm:{summary['out']})", err=True)


def done_line(summary: dict[str, Any]) -> str:
    """What was trained: encoder steps, or (train_scope features, no steps) the feature-head fit."""
    fit = summary.get("feature_fit")
    if summary["steps"] == 0 and fit:
        return (f"fitted the feature head on {summary['data']['train_pairs']} pairs (training pairwise accuracy "
                f"{100 * fit['train_accuracy']:.1f}%, {fit['seconds']:.0f} s; the encoder is not trained)")
    return f"trained {summary['steps']} steps at {summary['pairs_per_s']:.1f} pairs/s"


def _ngram_range(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        lo, hi = (int(part) for part in text.split("-"))
    except ValueError:
        raise typer.BadParameter(f"--ngram-range must look like 1-3, got {text!r}") from None
    return [lo, hi]


def register(app: typer.Typer) -> None:
    app.command("train-rm")(train_rm_command)
