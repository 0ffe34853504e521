"""The alternative-annotator test's single-expert variant (Calderon, Reichart and Dror, ACL 2025, the section on a
single expert): one rater is the expert whose labels are the truth, and the judge must do as well as each other
human at agreeing with the expert alone.

For each human j (every human rater but the expert), item by item: does the judge or j agree better with the
expert? It is `admissibility.alt_test` called with two columns, j and the expert, so that j's reference is the
expert alone (an item counts when j, the expert and the judge all rated it); the one-sided paired t-test with margin
epsilon per human is the alt-test's, the Benjamini-Yekutieli correction then runs over the humans j, and the judge
passes at a winning rate omega >= 0.5. `tailor agree --expert RATER` reports it beside the usual alt-test; the
first-person arena uses it with the voter as the expert (`arena/third_person.self_stand_in`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tailorbench.agreement.admissibility import AdmissibilityOptions, alignment_of, alt_test, epsilon_advice
from tailorbench.agreement.matrix import RatingMatrix
from tailorbench.agreement.t_test import by_adjust
from tailorbench.errors import ConfigError

METHOD = "alternative-annotator test, single-expert variant (Calderon, Reichart and Dror, ACL 2025)"


def single_expert_test(expert: np.ndarray, humans: np.ndarray, judge: np.ndarray, k: int, names: Sequence[str],
                       expert_name: str, opts: AdmissibilityOptions, values: np.ndarray | None = None,
                       custom: Any = None, categories: Sequence[Any] = ()) -> dict[str, Any]:
    """One judge against each human column of `humans` (items x H codes), the `expert` column the only reference;
    the result has the alt-test's shape (humans with rho_f, rho_h, p, p_adjusted, rejected; winning_rate;
    advantage_probability; passed)."""
    pair_opts = replace(opts, min_humans=2)  # j and the expert: the two humans every counted item has
    rows: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        pair = np.stack([humans[:, j], expert], axis=1)
        one = alt_test(pair, judge, k, [name, expert_name], pair_opts, values, custom, categories)
        row = dict(one["humans"][0])  # j against the judge, the expert alone as reference
        row.pop("p_adjusted", None)
        row.pop("rejected", None)
        rows.append(row)
    tested = [r for r in rows if "p" in r]
    for r, adjusted in zip(tested, by_adjust([r["p"] for r in tested]) if tested else []):
        r.update(p_adjusted=float(adjusted), rejected=bool(adjusted <= opts.q))
    n_rejected = sum(1 for r in tested if r["rejected"])
    omega = n_rejected / len(tested) if tested else None
    return {"expert": expert_name, "humans": rows, "n_tested": len(tested), "n_rejected": n_rejected,
            "winning_rate": omega,
            "advantage_probability": float(np.mean([r["rho_f"] for r in tested])) if tested else None,
            "passed": None if omega is None else bool(omega >= 0.5),
            "max_shared_items": max((r["n"] for r in rows), default=0)}


def single_expert(m: RatingMatrix, judges: Sequence[int], humans: Sequence[int], expert: str,
                  opts: AdmissibilityOptions) -> dict[str, Any]:
    """`tailor agree --expert RATER`: every judge column of `m` against each human column but the expert's, the
    expert's labels the only reference."""
    if expert not in m.raters:
        raise ConfigError(f"--expert {expert!r}: no such rater; raters: {', '.join(m.raters)}")
    col = m.raters.index(expert)
    if col not in humans:
        raise ConfigError(f"--expert {expert!r} is not a human rater (group {m.groups[col]!r}): the expert is the "
                          "human whose labels are the truth")
    others = [h for h in humans if h != col]
    if not others:
        raise ConfigError(f"--expert {expert!r}: no other human rater to compare the judge with")
    values, custom = alignment_of(m, opts)
    names = [m.raters[h] for h in others]
    out_judges = {m.raters[j]: single_expert_test(m.codes[:, col], m.codes[:, others], m.codes[:, j], m.k, names,
                                                  expert, opts, values, custom, m.categories) for j in judges}
    return {"method": METHOD, "expert": expert, "humans": names,
            "options": {"epsilon": opts.epsilon, "epsilon_advice": epsilon_advice(opts), "q": opts.q,
                        "min_items": opts.min_items,
                        "alignment": opts.alignment if custom is not None else "accuracy" if values is None
                        else "neg-rmse"},
            "judges": out_judges}
