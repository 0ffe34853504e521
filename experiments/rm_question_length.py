"""Screen: a question-dependent length weight on top of the shipped recipe.

Half of the held-out rows ask a question that some training user was asked too, and how often the longer answer
wins varies between questions more than sampling alone explains (variance of the per-question rate 0.024 against
0.016 binomial, questions with at least 8 rows). So the screen adds, per answer, z(log length) x (u . tfidf(the
question's character n-grams)): a length weight that depends on the question. It is still a per-answer score, and
u is fitted jointly with the shipped recipe's weights as one more sparse block. `--scale s` multiplies the block, so
its L2 is `ngram_l2 / s^2`. The protocol is rm_cv.py's: 5 user folds x seeds 0/1/2 with the product's cleaning,
standardisation and fit. Hard-tier accuracy is also split by `tier_overlap`.

    .venv/bin/python experiments/rm_question_length.py [--scales 0.5 1 2] [--paired]
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from rm_cv import (
    RECIPES,
    answer_features,
    evaluate,
    fold_data,
    longer_margin,
    paired_difference,
    screen_inputs,
    screen_parser,
    screen_row,
)
from rm_hard_overlap import CLASSES, add, table

from tailorbench.schema import DEFAULT_TIERS as TIERS
from tailorbench.schema import PairCase
from tailorbench.train import (
    FEATURES,
    NGRAM_FEATURE,
    NgramHead,
    NgramVocabulary,
    fit_feature_weights,
    pair_difference_matrix,
    tier_overlap,
)

SHIPPED = RECIPES["length+overlap+cosine+ngrams 1-3, l2 0.01"]
DENSE_ALL = [f for f in FEATURES if f != NGRAM_FEATURE]


def question_block(vocab: NgramVocabulary, questions: list[str], len_diff: np.ndarray, scale: float) -> torch.Tensor:
    """Sparse (pairs x question n-grams): tfidf(question) * (z_len(chosen) - z_len(rejected)) * scale."""
    rows = vocab.rows(questions)
    r_idx = np.concatenate([np.full(len(cols), p, np.int64) for p, (cols, _) in enumerate(rows)])
    c_idx = np.concatenate([cols for cols, _ in rows])
    vals = np.concatenate([vals * len_diff[p] * scale for p, (_, vals) in enumerate(rows)])
    return torch.sparse_coo_tensor(torch.tensor(np.stack([r_idx, c_idx])), torch.tensor(vals, dtype=torch.float32),
                                   (len(questions), len(vocab.terms)), check_invariants=True).coalesce()


def run(cases: list[PairCase], feats: dict, kind: Mapping[str, str], scale: float | None,
        right: dict[str, float] | None = None) -> tuple[str, str]:
    """One screen row; `right` (case id -> share of the 3 seeds on which the case is right) is filled if given."""
    cols = [DENSE_ALL.index(n) for n in SHIPPED.features if n != NGRAM_FEATURE]
    results: list = []
    pooled: dict[str, dict[str, list[int]]] = {t: {k: [0] * 7 for k in (*CLASSES, "all")} for t in TIERS}
    for seed in (0, 1, 2):
        for fold in range(5):
            train, held, distinct, pairs = fold_data(cases, seed, 5, fold)
            raw = np.stack([feats[t][cols] for t in distinct])
            mu, sd = raw.mean(0), raw.std(0)
            sd[sd == 0] = 1
            z = torch.tensor((raw - mu) / sd, dtype=torch.float32)
            answers = [t[2] for t in distinct]
            avocab = NgramVocabulary.fit(answers, SHIPPED.ngram_range, SHIPPED.ngram_min_df, SHIPPED.ngram_max_features)
            blocks = [pair_difference_matrix(avocab, answers, pairs)]
            qvocab = None
            if scale is not None:
                qvocab = NgramVocabulary.fit(sorted({c.question for c in train}), (1, 2), 2, 50_000)
                len_diff = (z[[a for a, _ in pairs], 0] - z[[b for _, b in pairs], 0]).numpy()
                blocks.append(question_block(qvocab, [c.question for c in train], len_diff, scale))
            sparse = torch.cat(blocks, dim=1).coalesce() if len(blocks) > 1 else blocks[0]
            w, _ = fit_feature_weights(z, pairs, 0.0, SHIPPED.feature_l2, sparse, SHIPPED.ngram_l2)
            nd, na = len(cols), len(avocab.terms)

            zc, zr = ((answer_features(feats, held, [getattr(c, side) for c in held], cols) - mu) / sd
                      for side in ("chosen", "rejected"))
            margin = (zc - zr) @ w[:nd]
            head = NgramHead(avocab, w[nd:nd + na])
            margin += head.score([c.chosen for c in held]) - head.score([c.rejected for c in held])
            if qvocab is not None:
                u = w[nd + na:]
                q_weight = np.array([float(vals @ u[c]) for c, vals in qvocab.rows([c.question for c in held])])
                margin += (zc[:, 0] - zr[:, 0]) * q_weight * scale
            results.append((evaluate(held, margin), evaluate(held, longer_margin(held))))
            if right is not None:
                for c, m in zip(held, margin):
                    right[c.id] = right.get(c.id, 0.0) + float(m > 0) / 3
            add(pooled, table(held, margin, kind))
    label = "shipped recipe" if scale is None else f"+ question x length block, scale {scale:g}"
    split = " / ".join(f"{100 * pooled['hard'][k][1] / pooled['hard'][k][0]:.1f}" for k in CLASSES)
    return screen_row(label, results), f"{label}: hard unique / repeated / contradicted {split}"


def main() -> None:
    parser = screen_parser(__doc__)
    parser.add_argument("--scales", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--paired", action="store_true",
                        help="also each scale minus the shipped recipe per tier, case by case (seed-averaged "
                             "verdicts), with a 95%% CI from resampling users")
    args = parser.parse_args()
    cases, feats = screen_inputs(args)
    kind = dict(zip([c.id for c in cases], tier_overlap(cases), strict=True))
    print("| screen | easy | medium | hard | all | balanced | hard folds ↑ / ↓ | min fold gap |")
    print("|---|---|---|---|---|---|---|---|")
    verdicts: dict[float | None, dict[str, float]] = {}
    for scale in (None, *args.scales):
        verdicts[scale] = {}
        row, note = run(cases, feats, kind, scale, verdicts[scale])
        print(row, flush=True)
        print("   ", note, flush=True)
    if args.paired:
        for scale in args.scales:
            diff = paired_difference(cases, verdicts[scale], verdicts[None])
            print(f"scale {scale:g} minus shipped, points: {diff}", flush=True)


if __name__ == "__main__":
    main()
