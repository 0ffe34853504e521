"""Round 4: the shipped recipe (length + persona overlap + MiniLM persona cosine + answer n-grams 1-3) plus
n-gram blocks over *parts* of the answer, fitted jointly with the other weights by the protocol of
experiments/rm_cv.py (5 user folds x seeds 0/1/2, same folds and cleaning).

Why: the answer n-gram head reads one L2-normalised TF-IDF vector of the whole answer, so the few n-grams of
its opening ("当然！以下是…" against "考虑到你…") or of its line starts (list and heading style: the generator's
fingerprint) weigh little against hundreds of body n-grams. A block of its own gives each part its own norm.
Blocks (`KIND:SIZE:SCALE`): `open` = the first SIZE characters, `close` = the last SIZE characters, `lines` =
the first SIZE characters of every line (joined by newlines). SCALE multiplies the block's features (the
same as dividing its L2 by SCALE²); each block has its own vocabulary (1-3 grams, min_df 2, 50,000).

    .venv/bin/python experiments/rm_cv.py --only "length+cosine"    # writes the MiniLM feature cache
    .venv/bin/python experiments/rm_position_blocks.py open:80:1 close:80:1 lines:4:1 open:80:1+lines:4:1
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from rm_cv import LOC, all_triples, cached_features, evaluate, longer_margin, screen_folds, screen_parser, screen_row

from tailorbench.datasets import load_benchmark
from tailorbench.schema import PairCase
from tailorbench.train import NgramVocabulary, distinct_triples, fit_feature_weights, pair_difference_matrix

Part = Callable[[str], str]


def part(kind: str, size: int) -> Part:
    if kind == "open":
        return lambda a: a.strip()[:size]
    if kind == "close":
        return lambda a: a.strip()[-size:]
    if kind == "lines":
        return lambda a: "\n".join(line.strip()[:size] for line in a.splitlines() if line.strip())
    raise SystemExit(f"unknown block kind {kind!r} (open, close, lines)")


def run(cases: list[PairCase], X: np.ndarray, row_of: dict, spec: str) -> str:
    blocks = [(part(k, int(s)), float(sc)) for k, s, sc in (b.split(":") for b in spec.split("+"))] if spec else []
    results = []
    for f in screen_folds(cases, X, row_of):
        answers = [t[2] for t in f.distinct]
        texts = [answers] + [[fn(a) for a in answers] for fn, _ in blocks]
        vocabs = [NgramVocabulary.fit(tx, (1, 3), 2, 50_000) for tx in texts]
        scales = [1.0] + [sc for _, sc in blocks]
        sparse = torch.cat([pair_difference_matrix(v, tx, f.pairs) * sc for v, tx, sc in zip(vocabs, texts, scales)],
                           dim=1)
        w, _ = fit_feature_weights(f.z, f.pairs, 0.0, 0.01, sparse.coalesce(), 1.7e-4)
        k = X.shape[1]
        held_triples, held_pairs = distinct_triples(f.held, "persona")
        margin = np.zeros(len(f.held))
        for sign, side in ((1.0, [held_triples[a] for a, _ in held_pairs]),
                           (-1.0, [held_triples[b] for _, b in held_pairs])):
            s = ((X[[row_of[t] for t in side]] - f.mu) / f.sd) @ w[:k]
            offset = k
            for b, (vocab, sc) in enumerate(zip(vocabs, scales)):
                fn = (lambda a: a) if b == 0 else blocks[b - 1][0]
                wb = w[offset : offset + len(vocab.terms)]
                s += sc * np.array([values @ wb[cols] for cols, values in vocab.rows([fn(t[2]) for t in side])])
                offset += len(vocab.terms)
            margin += sign * s
        results.append((evaluate(f.held, margin), evaluate(f.held, longer_margin(f.held))))
    return screen_row(spec or "base", results)


def main() -> None:
    parser = screen_parser(__doc__)
    parser.add_argument("blocks", nargs="*", help="KIND:SIZE:SCALE[+KIND:SIZE:SCALE...]; none = the shipped recipe")
    args = parser.parse_args()
    cases = load_benchmark(args.data).cases
    triples = all_triples(cases)
    X = cached_features(args.cache, LOC)
    row_of = {t: k for k, t in enumerate(triples)}
    for spec in args.blocks or [""]:
        print(run(cases, X, row_of, spec), flush=True)


if __name__ == "__main__":
    main()
