"""Screen: a small non-linear per-answer residual on top of the shipped recipe, tested paired.

Every recipe so far is linear in its features. This screen keeps the shipped recipe's fit (`fit_recipe`, the
product's fit) as an offset and adds g(x), a one-hidden-layer MLP (32 tanh units) of the answer's standardised
dense features and a 64-dimensional SVD of its character 1-3-gram TF-IDF, trained on the same training pairs
with the Bradley-Terry loss on (offset + g): it can learn interactions the linear score cannot, still as a
score of one answer. Fixed before the run: weight decay 1e-2, Adam lr 1e-2, 200 full-batch steps, torch seeded
by the fold seed; no other settings are tried. Decision rule (as for round 6's question x length block): ship
only if, on seed-averaged cross-fitted verdicts (5 user folds x seeds 0/1/2), the hard-tier difference
(residual - shipped) has a 95% user-bootstrap CI entirely above 0 and easy and medium are not below -0.2 points.

    .venv/bin/python experiments/rm_residual_mlp.py
"""

from __future__ import annotations

import numpy as np
import torch
from rm_cv import (
    DENSE,
    RECIPES,
    answer_features,
    evaluate,
    fold_data,
    longer_margin,
    paired_difference,
    recipe_config,
    screen_inputs,
    screen_parser,
    screen_row,
)
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from tailorbench.train import NGRAM_FEATURE, FeatureFit, fit_recipe

SHIPPED = RECIPES["length+overlap+cosine+ngrams 1-3, l2 0.01"]


def residual(x_train: torch.Tensor, offset: torch.Tensor, pairs: list[tuple[int, int]], seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(x_train.shape[1], 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, weight_decay=1e-2)
    a = torch.tensor([p[0] for p in pairs])
    b = torch.tensor([p[1] for p in pairs])
    for _ in range(200):
        opt.zero_grad()
        score = offset + net(x_train).squeeze(1)
        loss = -torch.nn.functional.logsigmoid(score[a] - score[b]).mean()
        loss.backward()
        opt.step()
    return net


def main() -> None:
    parser = screen_parser(__doc__)
    args = parser.parse_args()
    cases, feats = screen_inputs(args)
    cols = [DENSE.index(n) for n in SHIPPED.features if n != NGRAM_FEATURE]
    cfg = recipe_config(SHIPPED)
    right: dict[str, dict[str, float]] = {"shipped": {}, "residual": {}}
    rows: dict[str, list] = {"shipped": [], "residual": []}
    for seed in (0, 1, 2):
        for fold in range(5):
            _, held, distinct, pairs = fold_data(cases, seed, 5, fold)
            fitted = fit_recipe(cfg, np.stack([feats[t][cols] for t in distinct]), [t[2] for t in distinct], pairs)
            tfidf = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), min_df=2, sublinear_tf=True)
            svd = TruncatedSVD(64, random_state=seed)
            svd.fit(tfidf.fit_transform([t[2] for t in distinct]))

            def inputs(raw: np.ndarray, answers: list[str], fitted: FeatureFit = fitted,
                       tfidf: TfidfVectorizer = tfidf, svd: TruncatedSVD = svd) -> torch.Tensor:
                z = (raw - fitted.mean) / fitted.std
                return torch.tensor(np.hstack([z, svd.transform(tfidf.transform(answers))]), dtype=torch.float32)

            raw_train = np.stack([feats[t][cols] for t in distinct])
            answers = [t[2] for t in distinct]
            assert fitted.head is not None
            offset = fitted.scores(raw_train, answers)
            net = residual(inputs(raw_train, answers), torch.tensor(offset, dtype=torch.float32), pairs, seed)
            chosen, rejected = [c.chosen for c in held], [c.rejected for c in held]
            raw_c, raw_r = answer_features(feats, held, chosen, cols), answer_features(feats, held, rejected, cols)
            base = fitted.margins(raw_c, raw_r, chosen, rejected)
            with torch.no_grad():
                extra = (net(inputs(raw_c, chosen)) - net(inputs(raw_r, rejected))).squeeze(1).numpy()
            for name, margin in (("shipped", base), ("residual", base + extra)):
                rows[name].append((evaluate(held, margin), evaluate(held, longer_margin(held))))
                for c, m in zip(held, margin):
                    right[name][c.id] = right[name].get(c.id, 0.0) + float(m > 0) / 3
    print("| screen | easy | medium | hard | all | balanced | hard folds ↑ / ↓ | min fold gap |")
    print("|---|---|---|---|---|---|---|---|")
    for name in rows:
        print(screen_row(name, rows[name]))
    print("residual minus shipped, points: " + paired_difference(cases, right["residual"], right["shipped"]))


if __name__ == "__main__":
    main()
