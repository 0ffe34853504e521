"""How likely a check on a given number of users is to show the shipped recipe ahead of `longer` on each tier.

The recipe is cross-fitted as in rm_cv.py (5 user folds x seeds 0/1/2, the product's fit): every user of the
data gets the verdicts of a fit that never saw them. `split_power` (train/cross_fit.py, also in `tailor
train-rm`'s summary.json) then draws sets of users and counts how often each tier comes out ahead of, level
with or behind `longer`: as a held-out split of these 86 users (without replacement: the config's 17-user split
is one such draw), and as a fresh set of users like them (with replacement), for several sizes.

    .venv/bin/python experiments/rm_split_power.py [--data ../shared/data/personafeedback-general-dev]
"""

from __future__ import annotations

import numpy as np
from rm_cv import RECIPES, fit_fold, screen_inputs, screen_parser

from tailorbench.schema import DEFAULT_TIERS as TIERS
from tailorbench.train import SPLIT_DRAWS, split_power

SHIPPED = "length+overlap+cosine+ngrams 1-3, l2 0.01"


def main() -> None:
    parser = screen_parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="*", default=[17, 30, 43, 86, 150])
    args = parser.parse_args()
    cases, feats = screen_inputs(args)
    position = {id(c): i for i, c in enumerate(cases)}
    odds: dict[tuple[str, int], list[dict[str, dict[str, float]]]] = {}
    for seed in (0, 1, 2):
        margins = np.zeros(len(cases))
        for fold in range(5):
            fit = fit_fold(cases, feats, RECIPES[SHIPPED], 5, fold, seed)
            margins[[position[id(c)] for c in fit.held]] = fit.margins
        for size in args.sizes:
            for kind in ("split", "fresh"):
                if kind == "split" and size >= len({c.user_id for c in cases}):
                    continue
                odds.setdefault((kind, size), []).append(
                    split_power(cases, margins, size, SPLIT_DRAWS, seed, fresh=kind == "fresh"))
    print("| users checked | drawn | " + " | ".join(f"{t}: ahead / level / behind" for t in TIERS) + " |")
    print("|---|---|" + "---|" * len(TIERS))
    for (kind, size), runs in sorted(odds.items(), key=lambda kv: (kv[0][1], kv[0][0] == "fresh")):
        cells = [" / ".join(f"{100 * np.mean([r[t][k] for r in runs]):.0f}" for k in ("ahead", "level", "behind"))
                 for t in TIERS]
        drawn = "from these users, without replacement" if kind == "split" else "new users like these (bootstrap)"
        print(f"| {size} | {drawn} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
