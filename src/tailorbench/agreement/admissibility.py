"""Human admissibility of a judge: may it stand in for the annotators on these items?

Two views, side by side, for every judge (a rater outside the human group) on the items the humans rated:

- the **alternative-annotator test** (alt-test; Calderon, Reichart and Dror 2025, "The Alternative Annotator Test
  for LLM-as-a-Judge", ACL 2025; reference code github.com/nitaytech/AltTest): for each human j with enough
  shared items, leave j out and ask, item by item, whether the judge or j agrees better with the remaining
  humans; a one-sided paired t-test per human with cost-benefit margin epsilon, the Benjamini-Yekutieli
  correction over humans, and the winning rate omega (share of humans the judge beats); it passes at omega >= 0.5.
  The margin follows the authors' advice by who the humans are (README FAQ of the reference code): experts 0.2,
  skilled annotators 0.15, crowd workers 0.1 (`ANNOTATOR_EPSILON`, `--annotators`);
- **kappas**: Cohen's kappa of the judge with the human majority and its mean kappa with each human, beside each
  human's kappa with the majority of the other humans (leave one out), all with one seeded bootstrap over items.

One sentence per judge (and per tier) says which: "within human range", "below human range" or "not enough
shared items (k)" (docs/metrics.md, "Human admissibility", defines each). Product code does not import scipy,
so the t distribution and the correction are written here and checked against scipy in the tests.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.agreement import stats as st
from tailorbench.agreement.alignments import ALIGNMENTS, AlignmentFunction, is_known, known_names
from tailorbench.agreement.matrix import MISSING, RatingMatrix
from tailorbench.agreement.t_test import by_adjust, t_test_less
from tailorbench.bootstrap import Resampler, percentile_ci
from tailorbench.errors import ConfigError, DataError
from tailorbench.registry import did_you_mean

#: the authors' advice for the margin epsilon by who the humans are (github.com/nitaytech/AltTest, README FAQ
#: and alt_test_example.ipynb): the more expert the annotators, the larger the margin a judge is allowed
ANNOTATOR_EPSILON = {"expert": 0.2, "skilled": 0.15, "crowd": 0.1}


#: the authors' `min_humans_per_instance` default: an item counts with the judge and at least two humans
MIN_HUMANS = 2


WITHIN = "within human range"


BELOW = "below human range"


@dataclass(frozen=True)
class AdmissibilityOptions:
    """The alt-test's parameters (the paper's defaults) and the bootstrap of the kappas."""

    #: cost-benefit margin: the judge may be this much less often the better annotator (the authors: 0.2 for
    #: experts, 0.15 for skilled annotators, 0.1 for crowd workers; `ANNOTATOR_EPSILON`)
    epsilon: float = 0.2
    #: who the humans are ("expert", "skilled", "crowd"), when the margin was set by it; None when given as a number
    annotators: str | None = None
    #: false discovery rate of the Benjamini-Yekutieli correction over humans
    q: float = 0.05
    #: a human is tested only with at least this many items shared with the judge and another human
    min_items: int = 30
    #: an item counts only when at least this many humans rated it (and the judge did): the authors'
    #: `min_humans_per_instance`, at least 2 (one left out, one to align with)
    min_humans: int = MIN_HUMANS
    #: "accuracy" (share of the other humans with the same label), "neg-rmse" (minus the root mean squared
    #: distance to their labels, for ordered scales), "auto" (neg-rmse when an order is declared with --order,
    #: accuracy for string labels without one; refused on integer labels, whose scale only the user knows), or
    #: the name of a custom alignment function (`agreement/alignments.py`)
    alignment: str = "auto"
    n_resamples: int = 1000
    seed: int = 0
    level: float = 0.95
    #: the majority rule of the kappas: None = plurality with a tie left out; a category index = strict majority
    #: of that category, a tie going to the other side (the Re-Centering study's relevance gold)
    strict_positive: int | None = None

    def check(self) -> None:
        if not 0.0 <= self.epsilon < 1.0:
            raise ConfigError(f"option --epsilon must be in [0, 1), got {self.epsilon!r}")
        if self.annotators is not None:
            if self.annotators not in ANNOTATOR_EPSILON:
                raise ConfigError(f"option --annotators must be one of {', '.join(ANNOTATOR_EPSILON)}, "
                                  f"got {self.annotators!r}{did_you_mean(self.annotators, ANNOTATOR_EPSILON)}")
            if self.epsilon != ANNOTATOR_EPSILON[self.annotators]:
                raise ConfigError(f"--epsilon {self.epsilon} contradicts --annotators {self.annotators} (epsilon "
                                  f"{ANNOTATOR_EPSILON[self.annotators]}): give one of the two")
        if self.min_humans < MIN_HUMANS:
            raise ConfigError(f"option --min-humans must be at least {MIN_HUMANS} (one human left out, one to "
                              f"align with), got {self.min_humans}")
        if not 0.0 < self.q < 1.0:
            raise ConfigError(f"the false discovery rate q must be in (0, 1), got {self.q!r}")
        if self.min_items < 2:
            raise ConfigError(f"option --min-items must be at least 2 (a t-test needs two items), got {self.min_items}")
        if not is_known(self.alignment):
            raise ConfigError(f"option --alignment must be one of {', '.join(known_names())} (or a function "
                              f"registered in the group tailorbench.alignments), got {self.alignment!r}"
                              f"{did_you_mean(self.alignment, known_names())}")
        if self.n_resamples < 1 or not 0.0 < self.level < 1.0:
            raise ConfigError("--resamples must be >= 1 and --level between 0 and 1")


def margin(epsilon: float | None, annotators: str | None) -> tuple[float, str | None]:
    """(epsilon, annotators) from what a user gave: `--annotators` sets the margin the authors advise for them,
    `--epsilon` a number of one's own; neither is 0.2 (the authors' default, their advice for experts); both is
    allowed only when they agree (`AdmissibilityOptions.check` says so otherwise)."""
    if annotators is None:
        return (0.2 if epsilon is None else epsilon), None
    if annotators not in ANNOTATOR_EPSILON:
        raise ConfigError(f"option --annotators must be one of {', '.join(ANNOTATOR_EPSILON)}, got {annotators!r}"
                          f"{did_you_mean(annotators, ANNOTATOR_EPSILON)}")
    return (ANNOTATOR_EPSILON[annotators] if epsilon is None else epsilon), annotators


def _val(x: Any) -> float | None:
    """A finite float, or None for an undefined (NaN) or infinite one."""
    f = float(x)
    return f if math.isfinite(f) else None


def _misfit(pred: np.ndarray, counts: np.ndarray, values: np.ndarray | None) -> np.ndarray:
    """Per item, how badly the label `pred` fits the other humans' labels (`counts`, items x categories),
    on a scale where a smaller number is a better alignment with one denominator per item (so equal alignments
    compare equal exactly): accuracy -> number of other humans who disagree; neg-rmse -> summed squared
    distance to their labels (the root of its mean is minus the paper's alignment score)."""
    rows = np.arange(pred.shape[0])
    if values is None:
        return counts.sum(axis=1) - counts[rows, pred]
    dist = (values[pred][:, None] - values[None, :]) ** 2
    return (counts * dist).sum(axis=1)


def _custom_misfit(fn: AlignmentFunction, pred: np.ndarray, counts: np.ndarray,
                   categories: Sequence[Any]) -> np.ndarray:
    """Per item, minus a custom alignment score of the label `pred` with the other humans' labels (given as their
    labels, in category order, as the authors' code hands them to its scoring function)."""
    out = np.empty(pred.shape[0])
    for i in range(pred.shape[0]):
        others = [categories[c] for c in range(counts.shape[1]) for _ in range(int(counts[i, c]))]
        out[i] = -float(fn(categories[int(pred[i])], others))
    return out


def alt_test(humans: np.ndarray, judge: np.ndarray, k: int, names: Sequence[str], opts: AdmissibilityOptions,
             values: np.ndarray | None = None, custom: AlignmentFunction | None = None,
             categories: Sequence[Any] = ()) -> dict[str, Any]:
    """The alt-test of one judge against the humans: `humans` items x H codes, `judge` item codes (MISSING = -1);
    `custom` a registered alignment function over the labels `categories` (then `values` is unused).

    Items count for human j when j, the judge and at least `opts.min_humans` humans (j included) rated them (the
    reference code's instances with >= min_humans_per_instance humans and a judge label). Per item S_f, S_h
    are the alignments of the judge's and j's labels with the other humans; W_f = [S_f >= S_h],
    W_h = [S_h >= S_f]; rho_f = mean W_f, rho_h = mean W_h;
    d = W_h - W_f is tested against epsilon (H0: mean d >= epsilon); the correction runs over the tested humans.
    """
    onehot = (humans[:, :, None] == np.arange(k)).astype(np.int64)  # items x H x k
    total = onehot.sum(axis=1)
    n_humans = total.sum(axis=1)
    eligible = (judge != MISSING) & (n_humans >= opts.min_humans)
    scale = None if values is None else values.astype(float)
    tested: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        use = eligible & (humans[:, j] != MISSING)
        n = int(use.sum())
        row: dict[str, Any] = {"human": name, "n": n}
        rows.append(row)
        if n < opts.min_items:
            row["excluded"] = f"fewer than {opts.min_items} shared items"
            continue
        others = total[use] - onehot[use, j, :]
        if custom is not None:
            miss_f = _custom_misfit(custom, judge[use], others, categories)
            miss_h = _custom_misfit(custom, humans[use, j], others, categories)
        else:
            miss_f = _misfit(judge[use], others, scale)
            miss_h = _misfit(humans[use, j], others, scale)
        if scale is not None and custom is None:  # summed squared distances: equal up to rounding counts as equal
            close = np.isclose(miss_f, miss_h, rtol=1e-12, atol=1e-12)
            miss_f = np.where(close, miss_h, miss_f)
        w_f = (miss_f <= miss_h).astype(float)
        w_h = (miss_h <= miss_f).astype(float)
        d = w_h - w_f
        t, p = t_test_less(d, opts.epsilon)
        row.update(rho_f=float(w_f.mean()), rho_h=float(w_h.mean()), mean_d=float(d.mean()), t=_val(t), p=p)
        tested.append(row)
    if tested:
        adjusted = by_adjust([r["p"] for r in tested])
        for r, a in zip(tested, adjusted):
            r["p_adjusted"] = float(a)
            r["rejected"] = bool(a <= opts.q)
    n_rej = sum(1 for r in tested if r["rejected"])
    omega = n_rej / len(tested) if tested else None
    return {
        "epsilon": opts.epsilon,
        "q": opts.q,
        "min_items": opts.min_items,
        "min_humans": opts.min_humans,
        "alignment": opts.alignment if custom is not None else "accuracy" if values is None else "neg-rmse",
        "humans": rows,
        "n_tested": len(tested),
        "n_rejected": n_rej,
        "winning_rate": omega,
        "advantage_probability": float(np.mean([r["rho_f"] for r in tested])) if tested else None,
        "passed": None if omega is None else bool(omega >= 0.5),
        "max_shared_items": max((r["n"] for r in rows), default=0),
    }


def _gold(counts: np.ndarray, strict_positive: int | None) -> np.ndarray:
    if strict_positive is None:
        return st.majority(counts)
    return st.strict_majority(counts, strict_positive)


def _kappa_entry(point: float, boot: np.ndarray, level: float, n: int) -> dict[str, Any]:
    ci = percentile_ci(boot, level)[0]
    out: dict[str, Any] = {"value": _val(point), "ci": ci.as_list(), "n": n}
    if ci.n_undefined:
        out["undefined_resamples"] = ci.n_undefined
    return out


def _mean_entry(points: np.ndarray, boots: np.ndarray, level: float, n_pairs: int) -> dict[str, Any]:
    """Mean kappa over the pairs with a defined kappa, its bootstrap from the same resamples."""
    defined = np.isfinite(points)
    if not defined.any():
        return {"value": None, "ci": [None, None], "n_pairs": n_pairs, "n_defined": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resamples are counted by percentile_ci
        mean_boot = np.nanmean(boots[:, defined], axis=1)
    entry = _kappa_entry(float(points[defined].mean()), mean_boot, level, 0)
    entry.pop("n")
    return {**entry, "n_pairs": n_pairs, "n_defined": int(defined.sum())}


def human_reference(humans: np.ndarray, k: int, names: Sequence[str], opts: AdmissibilityOptions) -> dict[str, Any]:
    """Each human's Cohen's kappa with the majority of the other humans (leave one out), with CIs; their range
    and mean (the mean's CI from the same item resamples)."""
    onehot = (humans[:, :, None] == np.arange(k)).astype(float)
    total = onehot.sum(axis=1)
    blocks = [st.pair_block(humans[:, j], _gold(total - onehot[:, j, :], opts.strict_positive), k)
              for j in range(len(names))]
    per: list[dict[str, Any]] = []
    points = np.array([st.cohen_from_totals(b.sum(axis=0), k)[0] for b in blocks])
    boots = np.zeros((opts.n_resamples, 0))
    if blocks and humans.shape[0]:
        totals = Resampler(humans.shape[0], opts.n_resamples, opts.seed).totals(blocks)
        boots = np.stack([st.cohen_from_totals(t, k)[:, 0] for t in totals], axis=1)
    for j, name in enumerate(names):
        n = int(blocks[j].sum())
        if n:
            per.append({"human": name, **_kappa_entry(points[j], boots[:, j], opts.level, n)})
    used = [j for j in range(len(names)) if blocks[j].sum() > 0]
    finite = [float(points[j]) for j in used if np.isfinite(points[j])]
    mean = _mean_entry(points[used], boots[:, used], opts.level, len(used)) if used else None
    return {"per_human": per, "range": [min(finite), max(finite)] if finite else None, "mean": mean}


def judge_kappas(humans: np.ndarray, judge: np.ndarray, k: int, opts: AdmissibilityOptions) -> dict[str, Any]:
    """kappa(judge, majority of all humans) and the mean of kappa(judge, human j) over humans, with CIs."""
    counts = (humans[:, :, None] == np.arange(k)).sum(axis=1).astype(float)
    blocks = [st.pair_block(judge, _gold(counts, opts.strict_positive), k)]
    blocks += [st.pair_block(judge, humans[:, j], k) for j in range(humans.shape[1])]
    shared = [int(b.sum()) for b in blocks]
    points = np.array([st.cohen_from_totals(b.sum(axis=0), k)[0] for b in blocks])
    totals = Resampler(humans.shape[0], opts.n_resamples, opts.seed).totals(blocks)
    boots = np.stack([st.cohen_from_totals(t, k)[:, 0] for t in totals], axis=1)
    pairs = [j for j in range(1, len(blocks)) if shared[j]]
    return {
        "vs_majority": _kappa_entry(points[0], boots[:, 0], opts.level, shared[0]),
        "mean_vs_humans": _mean_entry(points[pairs], boots[:, pairs], opts.level, len(pairs)),
    }


def sentence(alt: dict[str, Any]) -> str:
    """The verdict of one judge on one set of items: the alt-test decides (docs/metrics.md)."""
    if alt["passed"] is None:
        return f"not enough shared items ({alt['max_shared_items']})"
    return WITHIN if alt["passed"] else BELOW


def _one(humans: np.ndarray, judge: np.ndarray, m: RatingMatrix, names: Sequence[str], opts: AdmissibilityOptions,
         values: np.ndarray | None, custom: AlignmentFunction | None) -> dict[str, Any]:
    alt = alt_test(humans, judge, m.k, names, opts, values, custom, m.categories)
    return {"sentence": sentence(alt), "alt_test": alt, "kappa": judge_kappas(humans, judge, m.k, opts)}


def _check_label_overlap(m: RatingMatrix, judges: Sequence[int], codes_h: np.ndarray) -> None:
    """A judge whose labels share no category with the humans' speaks another vocabulary (a run directory's
    chosen/rejected beside A/B votes): refused, since every comparison would count as a disagreement."""
    human_cats = set(np.unique(codes_h[codes_h != MISSING]).tolist())
    for j in judges:
        col = m.codes[:, j]
        cats = set(np.unique(col[col != MISSING]).tolist())
        if cats and human_cats and not cats & human_cats:
            raise ConfigError(
                f"judge {m.raters[j]!r} labels {sorted(str(m.categories[c]) for c in cats)} share no category with "
                f"the humans' {sorted(str(m.categories[c]) for c in human_cats)}: write both in one vocabulary")


def admissibility(m: RatingMatrix, judges: Sequence[int], humans: Sequence[int],
                  opts: AdmissibilityOptions | None = None,
                  tiers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Alt-test and kappas of every judge column of `m` against the human columns, overall and per tier (`tiers`:
    item -> tier; items without a tier count overall only)."""
    opts = opts or AdmissibilityOptions()
    opts.check()
    values, custom = alignment_of(m, opts)
    names = [m.raters[h] for h in humans]
    codes_h = m.codes[:, list(humans)]
    strata: dict[str, np.ndarray] = {}
    if tiers:
        tier_of = np.array([tiers.get(item, "") for item in m.items], dtype=object)
        strata = {t: tier_of == t for t in sorted({t for t in tier_of if t})}
        if not strata:
            raise ConfigError("--tiers: no rated item has a tier there (do its ids match the ratings' items?)")
    _check_label_overlap(m, judges, codes_h)
    out_judges: dict[str, Any] = {}
    for j in judges:
        entry = {"group": m.groups[j], **_one(codes_h, m.codes[:, j], m, names, opts, values, custom)}
        if strata:
            entry["by_tier"] = {t: _one(codes_h[rows], m.codes[rows, j], m, names, opts, values, custom)
                                for t, rows in strata.items()}
        out_judges[m.raters[j]] = entry
    reference = human_reference(codes_h, m.k, names, opts)
    by_tier_ref = {t: human_reference(codes_h[rows], m.k, names, opts) for t, rows in strata.items()}
    return {
        "method": "alternative-annotator test (Calderon, Reichart and Dror, ACL 2025) and Cohen's kappa",
        "humans": names,
        "options": {"epsilon": opts.epsilon, "epsilon_advice": epsilon_advice(opts), "q": opts.q,
                    "min_items": opts.min_items, "min_humans": opts.min_humans,
                    "alignment": opts.alignment if custom is not None else "accuracy" if values is None
                    else "neg-rmse",
                    "majority": "plurality, ties left out" if opts.strict_positive is None
                    else f"strict majority of {m.categories[opts.strict_positive]!r}, a tie goes to the other side",
                    "bootstrap": {"n_resamples": opts.n_resamples, "seed": opts.seed, "level": opts.level}},
        "judges": out_judges,
        "human_reference": reference,
        **({"human_reference_by_tier": by_tier_ref} if by_tier_ref else {}),
    }


def alignment_of(m: RatingMatrix, opts: AdmissibilityOptions) -> tuple[np.ndarray | None, AlignmentFunction | None]:
    """(the values of a neg-rmse alignment or None for accuracy, a custom function or None) for these labels.

    `auto` reads the declared scale: an order (`--order`) is neg-rmse over its ranks, string labels without one
    accuracy; integer-coded labels without a declared scale are refused, since 1/2/3 may be categories (a
    nominal code book) as well as points on a scale, and the two alignments can reverse a verdict. Two integer
    categories are not refused: there both alignments order every pair of labels alike (accuracy is used)."""
    if opts.alignment in ("auto", "accuracy", "neg-rmse"):
        if opts.alignment == "neg-rmse" and m.values is None:
            raise ConfigError("--alignment neg-rmse needs ordered labels (integer labels or --order)")
        if opts.alignment == "auto" and m.scale == "numeric" and m.k > 2:
            raise ConfigError(
                f"--alignment auto: the labels are integers ({', '.join(str(c) for c in m.categories)}), which may "
                "be nominal codes or points on a scale; declare which: --alignment accuracy (nominal), "
                "--alignment neg-rmse (a numeric scale) or --label-order (an ordinal scale)")
        ordered = opts.alignment == "neg-rmse" or (opts.alignment == "auto" and m.scale == "ordinal")
        return (m.values if ordered else None), None
    return None, ALIGNMENTS.get(opts.alignment)


def epsilon_advice(opts: AdmissibilityOptions) -> str:
    """One line for reports: the margin and whose advice it follows."""
    who = {"expert": "experts", "skilled": "skilled annotators", "crowd": "crowd workers"}
    if opts.annotators is not None:
        return f"epsilon {opts.epsilon}: the authors' advice for {who[opts.annotators]}"
    match = [a for a, e in ANNOTATOR_EPSILON.items() if e == opts.epsilon]
    if match:
        return f"epsilon {opts.epsilon}: the authors' advice for {who[match[0]]}"
    return (f"epsilon {opts.epsilon}: the authors advise 0.2 for experts, 0.15 for skilled annotators, "
            "0.1 for crowd workers")


def read_tiers(path: str | Path) -> dict[str, str]:
    """item -> tier from a JSONL file with `id` (or `item`) and `tier` per line, e.g. the benchmark `tailor
    tiers` writes; a line without either is a DataError naming it."""
    from tailorbench.datasets.rows import InvalidRows, read_jsonl

    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file (--tier-file wants a JSONL file with id and tier per line)")
    out: dict[str, str] = {}
    for line, row in read_jsonl(path, InvalidRows()):
        item = row.get("id", row.get("item"))
        tier = row.get("tier")
        if item is None or isinstance(item, bool) or not isinstance(item, str | int):
            raise DataError(path, line, "id", f"missing or not a string: {item!r}")
        if not isinstance(tier, str) or not tier.strip():
            raise DataError(path, line, "tier", f"missing or not a non-empty string: {tier!r}")
        if str(item) in out and out[str(item)] != tier:
            raise DataError(path, line, "tier", f"item {item!r} has tier {out[str(item)]!r} on an earlier line")
        out[str(item)] = tier.strip()
    if not out:
        raise DataError(path, None, None, "no line with an id and a tier")
    return out


def split_raters(m: RatingMatrix, judge_names: Sequence[str] = (), human_group: str = "human") -> tuple[
        list[int], list[int]]:
    """(judge columns, human columns): judges are the raters named in `judge_names` and every rater outside the
    human group; an unknown name is a ConfigError listing the raters."""
    index = {r: i for i, r in enumerate(m.raters)}
    unknown = [n for n in judge_names if n not in index]
    if unknown:
        raise ConfigError(f"--judge {unknown[0]!r} is not a rater of the data; raters: {', '.join(m.raters)}")
    named = {index[n] for n in judge_names}
    judges = [i for i in range(len(m.raters)) if i in named or m.groups[i] != human_group]
    humans = [i for i in range(len(m.raters)) if i not in named and m.groups[i] == human_group]
    return judges, humans
