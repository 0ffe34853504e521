"""Screen: does the shipped recipe leave length signal on the table on the hard tier?

The Bradley-Terry fit picks one length weight for the pooled loss, which easy and medium pairs dominate; the
goal is a minimum over tiers. Two ways to lean the shipped recipe's out-of-fold verdicts towards `longer`,
with nothing refitted (5 user folds x seeds 0/1/2, as rm_cv.py):

- length boost: margin + lam * log(len chosen / len rejected), for a grid of lam (a per-answer score still,
  so a checkpoint could carry it as a larger length weight);
- fallback: `longer`'s verdict wherever |margin| is below the q-quantile of all |margin| (not a per-answer
  score; an upper view of what deferring to length on the unsure pairs could give).

    .venv/bin/python experiments/rm_length_fallback.py
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from rm_cv import RECIPES, FoldFit, evaluate, fit_fold, longer_margin, screen_inputs, screen_parser

SHIPPED = RECIPES["length+overlap+cosine+ngrams 1-3, l2 0.01"]
TIER_COLUMNS = ("easy", "medium", "hard", "all")


def row(label: str, fits: list[FoldFit], margin_of: Callable[[FoldFit], np.ndarray]) -> str:
    """Mean over the 15 folds of per-tier accuracy (%) of `margin_of(fit)`."""
    results = [evaluate(f.held, margin_of(f)) for f in fits]
    acc = {t: np.mean([100 * r[t]["accuracy"] for r in results]) for t in TIER_COLUMNS}
    return f"| {label} | " + " | ".join(f"{acc[t]:.1f}" for t in TIER_COLUMNS) + " |"


def boosted(fit: FoldFit, lam: float) -> np.ndarray:
    return fit.margins + lam * np.log(np.array([len(c.chosen) / len(c.rejected) for c in fit.held]))


def fallback(fit: FoldFit, tau: float) -> np.ndarray:
    return np.where(np.abs(fit.margins) > tau, fit.margins, np.sign(longer_margin(fit.held)))


def main() -> None:
    parser = screen_parser(__doc__)
    args = parser.parse_args()
    cases, feats = screen_inputs(args)
    fits = [fit_fold(cases, feats, SHIPPED, 5, fold, seed) for seed in (0, 1, 2) for fold in range(5)]
    print("| variant | easy | medium | hard | all |")
    print("|---|---|---|---|---|")
    for lam in (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0):
        print(row(f"length boost {lam:g}", fits, partial(boosted, lam=lam)))
    spread = np.concatenate([np.abs(f.margins) for f in fits])
    for q in (0.1, 0.2, 0.3, 0.4, 0.5):
        tau = float(np.quantile(spread, q))
        print(row(f"fallback to `longer` on the {100 * q:.0f}% least sure (abs margin < {tau:.2f})", fits,
                  partial(fallback, tau=tau)))
    print(row("`longer`", fits, lambda f: longer_margin(f.held)))


if __name__ == "__main__":
    main()
