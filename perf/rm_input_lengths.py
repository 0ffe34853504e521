"""How much of a like-for-like fine-tune's work a faster loop could skip: the token lengths of the training
inputs after the truncation policy (equal lengths leave no padding for length grouping to remove) and the share
of distinct inputs among an epoch's chosen/rejected slots (the most that computing each repeat once could save).

    .venv/bin/python perf/rm_input_lengths.py [--data ../shared/data/personafeedback-general-dev] [--max-length 256]
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
from transformers import AutoTokenizer

from tailorbench.models.reward_hf import RewardEncoder, RewardFormat
from tailorbench.train.config import RMTrainConfig
from tailorbench.train.data import distinct_triples
from tailorbench.train.trainer import prepare_data, resolve_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="../shared/data/personafeedback-general-dev")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--max-length", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        cfg = RMTrainConfig(data=args.data, model=args.model, max_length=args.max_length, out=out).validate()
        train, _, _ = prepare_data(cfg)
    triples, pairs = distinct_triples(train, cfg.setting)
    encoder = RewardEncoder(AutoTokenizer.from_pretrained(resolve_model(args.model)),
                            RewardFormat(max_length=args.max_length))
    encoded, truncated = encoder.encode(triples)
    lengths = np.array([len(e["input_ids"]) for e in encoded])
    slots = 2 * len(pairs)
    print(f"{len(triples)} distinct training inputs, {int(truncated.sum())} truncated; tokens per input: "
          f"min {lengths.min()}, median {int(np.median(lengths))}, max {lengths.max()}")
    print(f"{slots} chosen/rejected slots per epoch: distinct share {len(triples) / slots:.3f}, so computing each "
          f"repeat once saves at most {1 - len(triples) / slots:.1%} (speed-up bound {slots / len(triples):.2f}x)")


if __name__ == "__main__":
    main()
