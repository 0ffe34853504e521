"""An independent alternative-annotator test, written from the paper's definitions (Calderon, Reichart and Dror,
ACL 2025) as a plain loop over instances in dicts, with scipy's t-test and Benjamini-Yekutieli correction: what
tests/agreement/test_admissibility.py and perf/admissibility_pilot.py compare tailorbench's figures with."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats as ss


def accuracy(pred: Any, anns: list[Any]) -> float:
    """Share of the other humans giving the same label."""
    return float(np.mean([pred == a for a in anns]))


def neg_rmse(pred: Any, anns: list[Any]) -> float:
    """Minus the root mean squared distance to the other humans' labels."""
    return -float(np.sqrt(np.mean([(pred - a) ** 2 for a in anns])))


def reference_alt_test(llm: dict[str, Any], humans: dict[str, dict[str, Any]], epsilon: float, q: float,
                       min_items: int, score: Callable[[Any, list[Any]], float],
                       min_humans: int = 2) -> dict[str, Any]:
    """Per tested human its p-value, adjusted p-value and advantage probability; the rejected humans, the winning
    rate and the mean advantage probability (None when no human is tested). `min_humans` is the reference code's
    `min_humans_per_instance` (instances with fewer humans are dropped before anything else)."""
    raters_of: dict[str, list[str]] = {}
    for h, anns in humans.items():
        for i in anns:
            raters_of.setdefault(i, []).append(h)
    keep = {i for i, hs in raters_of.items() if len(hs) >= min_humans and i in llm}
    per: dict[str, tuple[int, float, float]] = {}
    for h, anns in humans.items():
        inst = [i for i in anns if i in keep]
        if len(inst) < min_items:
            continue
        wf, wh = [], []
        for i in inst:
            rest = [humans[o][i] for o in raters_of[i] if o != h]
            sf, sh = score(llm[i], rest), score(anns[i], rest)
            wf.append(int(sf >= sh))
            wh.append(int(sh >= sf))
        d = np.array(wh, dtype=float) - np.array(wf, dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy's precision-loss warning on a constant sample
            p = float(ss.ttest_1samp(d, epsilon, alternative="less").pvalue)
        per[h] = (len(inst), 1.0 if np.isnan(p) else p, float(np.mean(wf)))
    names = list(per)
    adj = ss.false_discovery_control([per[h][1] for h in names], method="by") if names else []
    rejected = {h for h, a in zip(names, adj) if a <= q}
    return {"p": {h: per[h][1] for h in names}, "adj": dict(zip(names, (float(a) for a in adj))),
            "rejected": rejected, "omega": len(rejected) / len(names) if names else None,
            "rho": float(np.mean([per[h][2] for h in names])) if names else None}
