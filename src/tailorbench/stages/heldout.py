"""Binary raters against the strict human majority on held-out items: the before/after figures of the
interventions. Every statistic comes from `agreement/` (vs-majority blocks, Cohen's kappa from confusion totals,
one seeded bootstrap over items shared by all raters, so the differences between raters get paired CIs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tailorbench.agreement import stats as st
from tailorbench.agreement.bootstrap import Resampler, percentile_ci


def _num(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def compare_to_majority(
    gold: Mapping[str, bool],
    raters: Mapping[str, Mapping[str, bool]],
    humans: Mapping[str, Mapping[str, bool]] | None = None,
    reference: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Per rater on the gold items: share positive, accuracy / precision / recall / F1 (positive class = True)
    and Cohen's kappa against the majority label, each with a CI; `mean_kappa_with_humans` = the plain mean of
    its kappa with each human (the paper's human-model kappa, on these items); with `reference`, every other
    rater's F1 and kappa minus the reference's, with paired bootstrap CIs. Votes for items without a gold label
    are counted (`n_without_gold`), not used."""
    items = sorted(gold)
    g = np.array([1 if gold[k] else 0 for k in items], dtype=int)
    codes = {name: np.array([(1 if v[k] else 0) if k in v else -1 for k in items], dtype=int)
             for name, v in raters.items()}
    vs = [st.vs_majority_block(c, g, 2) for c in codes.values()]
    pb = [st.pair_block(c, g, 2) for c in codes.values()]
    resampler = Resampler(len(items), n_resamples, seed)
    totals = resampler.totals(vs + pb) if items else []
    names = list(codes)
    out: dict[str, Any] = {"n_items": len(items), "share_positive_majority": _num(g.mean()) if items else None,
                           "raters": {}, "bootstrap": {"method": "percentile, resampling items",
                                                       "n_resamples": n_resamples, "seed": seed, "level": level}}
    boots: dict[str, dict[str, np.ndarray]] = {}
    for j, name in enumerate(names):
        c = codes[name]
        rated = c >= 0
        entry: dict[str, Any] = {"n": int(rated.sum()),
                                 "n_without_gold": sum(1 for k in raters[name] if k not in gold),
                                 "share_positive": _num((c[rated] == 1).mean()) if rated.any() else None}
        if items:
            point = st.vs_majority_from_totals(vs[j].sum(axis=0), 2, 1)
            kappa = st.cohen_from_totals(pb[j].sum(axis=0), 2)[0]
            b_vs = st.vs_majority_from_totals(totals[j], 2, 1)
            b_kappa = st.cohen_from_totals(totals[len(names) + j], 2)[:, 0]
            cis = percentile_ci(np.column_stack([b_vs, b_kappa]), level)
            for i, stat in enumerate(("accuracy", "precision", "recall", "f1")):
                entry[stat] = _num(point[i])
                entry[f"{stat}_ci"] = cis[i].as_list()
            entry["kappa"] = _num(kappa)
            entry["kappa_ci"] = cis[4].as_list()
            boots[name] = {"f1": b_vs[:, 3], "kappa": b_kappa}
        if humans:
            ks = []
            for h in humans.values():
                hc = np.array([(1 if h[k] else 0) if k in h else -1 for k in items], dtype=int)
                value = st.cohen_kappa(c, hc, 2) if items else float("nan")
                if np.isfinite(value):
                    ks.append(value)
            entry["mean_kappa_with_humans"] = float(np.mean(ks)) if ks else None
            entry["n_humans_with_kappa"] = len(ks)
        out["raters"][name] = entry
    if reference is not None and reference in boots:
        ref = out["raters"][reference]
        deltas: dict[str, Any] = {}
        for name in names:
            if name == reference or name not in boots:
                continue
            e = out["raters"][name]
            d: dict[str, Any] = {}
            for stat in ("f1", "kappa"):
                a, b = ref.get(stat), e.get(stat)
                d[f"{stat}_gain"] = a - b if a is not None and b is not None else None
                d[f"{stat}_gain_ci"] = percentile_ci(boots[reference][stat] - boots[name][stat], level)[0].as_list()
            deltas[name] = d
        out["reference"] = reference
        out["gain_of_reference_over"] = deltas
    return out
