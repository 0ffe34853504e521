"""The loss terms and the batches of the reward-model loop (`train/trainer.py`): the Bradley-Terry loss with
margin and reward centering (TRL's definition), the length-debias term, the frozen lower layers, and the seeded,
length-grouped batches of pair indices."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from tailorbench.errors import ConfigError


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


