"""The `agree` report: every statistic with its bootstrap interval, as one JSON-ready dict and a Rich table.

Top-level figures cover all raters together; per-group figures sit under "groups". Anything undefined is None
with a note that says why, never a bare NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from tailorbench.agreement import stats as st
from tailorbench.agreement.admissibility import AdmissibilityOptions, admissibility, split_raters
from tailorbench.agreement.admissibility_table import headers, render_rows
from tailorbench.agreement.matrix import MISSING, RatingMatrix, build_matrix
from tailorbench.agreement.ratings import RatingSet
from tailorbench.bootstrap import Interval, Resampler, percentile_ci
from tailorbench.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import RenderableType


@dataclass(frozen=True)
class AgreeOptions:
    """Bootstrap settings and the positive class for precision/recall/F1."""

    n_resamples: int = 1000
    seed: int = 0
    level: float = 0.95
    positive: str | None = None


def _num(x: Any) -> float | None:
    x = float(x)
    return None if not np.isfinite(x) else x


def _stat(value: Any, ci: Interval, note: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"value": _num(value), "ci": ci.as_list()}
    if ci.n_undefined:
        out["undefined_resamples"] = ci.n_undefined
    if out["value"] is None and note:
        out["note"] = note
    return out


def _undefined_reason(m: RatingMatrix, counts: np.ndarray) -> str:
    per_item = counts.sum(axis=1)
    if m.codes.shape[1] < 2:
        return "only one rater: agreement needs at least two ratings of an item"
    if not (per_item >= 2).any():
        return "no item has two or more ratings"
    used = counts[per_item >= 2].sum(axis=0)
    if (used > 0).sum() == 1:
        label = m.categories[int(np.argmax(used))]
        return f"every rating is {label!r}: chance agreement is 1, so chance-corrected agreement is undefined"
    return "undefined on these data"


def _fleiss_handling(counts: np.ndarray) -> str:
    n_i = counts.sum(axis=1)
    used = n_i[n_i >= 2]
    dropped = int((n_i < 2).sum())
    if used.size == 0:
        text = "no item has two or more ratings"
    elif used.min() == used.max():
        text = f"every used item has {int(used[0])} ratings: Fleiss (1971)"
    else:
        text = (
            f"items have {int(used.min())} to {int(used.max())} ratings: each P_i uses its own n_i, P_bar is "
            "their unweighted mean and p_j pools all ratings (Fleiss (1971) when n_i is constant)"
        )
    if dropped:
        text += f"; {dropped} item(s) with fewer than 2 ratings excluded"
    return text


def _positive_index(m: RatingMatrix, positive: str | None) -> tuple[int | None, str]:
    if positive is not None:
        for i, c in enumerate(m.categories):
            if str(c) == positive:
                return i, f"positive class {positive!r}"
        raise ConfigError(f"--positive {positive!r} is not a label of the data {m.categories}")
    for candidate in (True, "chosen"):
        for i, c in enumerate(m.categories):
            if type(c) is type(candidate) and c == candidate:
                return i, f"positive class {candidate!r}"
    return None, "macro average over categories (no --positive given)"


def _core(m: RatingMatrix, opts: AgreeOptions) -> tuple[dict[str, Any], np.ndarray]:
    """Percent agreement, Fleiss' kappa and Krippendorff's alpha for one matrix; returns counts too."""
    k = m.k
    counts = st.category_counts(m.codes, k)
    levels: list[st.Level] = ["nominal", "ordinal", "interval"] if m.ordered else ["nominal"]
    blocks = [st.fleiss_block(counts), st.alpha_block(counts)]
    resampler = Resampler(len(m.items), opts.n_resamples, opts.seed)
    fl_tot, al_tot = resampler.totals(blocks)
    fl_point = st.fleiss_from_totals(blocks[0].sum(axis=0), k)
    fl_ci = percentile_ci(st.fleiss_from_totals(fl_tot, k), opts.level)
    reason = _undefined_reason(m, counts)
    alpha: dict[str, Any] = {}
    for level in levels:
        point = st.alpha_from_totals(blocks[1].sum(axis=0), k, level, m.values)
        boot = st.alpha_from_totals(al_tot, k, level, m.values)
        alpha[level] = _stat(point, percentile_ci(boot, opts.level)[0], reason)
    if not m.ordered:
        alpha["note"] = "ordinal and interval alpha need an order of the labels (--label-order or integer labels)"
    p_i = st.per_item_agreement(counts)
    maj = st.majority(counts)
    out: dict[str, Any] = {
        "n_items": len(m.items),
        "n_raters": len(m.raters),
        "n_ratings": int((m.codes != MISSING).sum()),
        "percent_agreement": _num(fl_point[0]),
        "percent_agreement_ci": fl_ci[0].as_list(),
        "fleiss_kappa": {
            **_stat(fl_point[1], fl_ci[1], reason),
            "per_category": {
                str(c): _stat(fl_point[2 + j], fl_ci[2 + j], "category unused or used by every rating")
                for j, c in enumerate(m.categories)
            },
            "n_items_used": int((counts.sum(axis=1) >= 2).sum()),
            "handling": _fleiss_handling(counts),
        },
        "krippendorff_alpha": alpha,
        "majority": {
            "tie_policy": "a tie for the most votes has no majority label (never broken by order or chance)",
            "n_ties": int(((maj < 0) & (counts.sum(axis=1) > 0)).sum()),
        },
        "per_item": [
            {
                "item": item,
                "n_ratings": int(counts[i].sum()),
                "p_i": _num(p_i[i]),
                "majority": None if maj[i] < 0 else m.categories[int(maj[i])],
            }
            for i, item in enumerate(m.items)
        ],
    }
    return out, counts


def _pairwise(m: RatingMatrix, opts: AgreeOptions) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    k = m.k
    pairs = [(a, b) for a, b in combinations(range(len(m.raters)), 2)]
    blocks = [st.pair_block(m.codes[:, a], m.codes[:, b], k) for a, b in pairs]
    n_pair = [int(bl.sum()) for bl in blocks]
    keep = [i for i, n in enumerate(n_pair) if n > 0]
    no_overlap = len(pairs) - len(keep)
    if not keep:
        return [], {}, no_overlap
    totals = Resampler(len(m.items), opts.n_resamples, opts.seed).totals([blocks[i] for i in keep])
    boots = np.stack([st.cohen_from_totals(t, k) for t in totals], axis=1)  # (B, pairs, 3)
    points = np.stack([st.cohen_from_totals(blocks[i].sum(axis=0), k) for i in keep])  # (pairs, 3)
    rows: list[dict[str, Any]] = []
    kinds: dict[str, list[int]] = {}
    for j, i in enumerate(keep):
        a, b = pairs[i]
        ci = percentile_ci(boots[:, j, :], opts.level)
        row: dict[str, Any] = {
            "a": m.raters[a],
            "b": m.raters[b],
            "group_a": m.groups[a],
            "group_b": m.groups[b],
            "n": n_pair[i],
            "kappa": _num(points[j, 0]),
            "ci": ci[0].as_list(),
        }
        if m.ordered:
            row.update(
                kappa_linear=_num(points[j, 1]),
                ci_linear=ci[1].as_list(),
                kappa_quadratic=_num(points[j, 2]),
                ci_quadratic=ci[2].as_list(),
            )
        if row["kappa"] is None:
            row["note"] = "undefined: both raters gave one and the same category on their shared items"
        rows.append(row)
        kinds.setdefault("-".join(sorted((m.groups[a], m.groups[b]))), []).append(j)
    by_kind: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resamples are counted by percentile_ci
        for kind, idx in sorted(kinds.items()):
            pts = points[idx]
            defined = int(np.isfinite(pts[:, 0]).sum())
            entry: dict[str, Any] = {"n_pairs": len(idx), "n_defined": defined}
            names = ("kappa", "kappa_linear", "kappa_quadratic") if m.ordered else ("kappa",)
            mean_boot = np.nanmean(boots[:, idx, :], axis=1) if defined else np.full((boots.shape[0], 3), np.nan)
            cis = percentile_ci(mean_boot, opts.level)
            for w, name in enumerate(names):
                entry[name] = _stat(np.nanmean(pts[:, w]) if defined else np.nan, cis[w], "no defined pair")
            by_kind[kind] = entry
    return rows, by_kind, no_overlap


def _vs_majority(m: RatingMatrix, opts: AgreeOptions) -> tuple[list[dict[str, Any]], str]:
    k = m.k
    positive, how = _positive_index(m, opts.positive)
    onehot = np.stack([st.category_counts(m.codes[:, [r]], k) for r in range(len(m.raters))], axis=1)
    group_names = sorted(set(m.groups))
    specs: list[tuple[int, str, bool]] = []
    blocks: list[np.ndarray] = []
    for g in group_names:
        members = [r for r, gr in enumerate(m.groups) if gr == g]
        g_counts = onehot[:, members, :].sum(axis=1)
        for r in range(len(m.raters)):
            inside = m.groups[r] == g
            if len(members) - int(inside) < 1:
                continue
            gold = st.majority(g_counts - onehot[:, r, :] if inside else g_counts)
            specs.append((r, g, inside))
            blocks.append(st.vs_majority_block(m.codes[:, r], gold, k))
    if not blocks:
        return [], how
    totals = Resampler(len(m.items), opts.n_resamples, opts.seed).totals(blocks)
    rows = []
    for (r, g, inside), block, tot in zip(specs, blocks, totals):
        point = st.vs_majority_from_totals(block.sum(axis=0), k, positive)
        cis = percentile_ci(st.vs_majority_from_totals(tot, k, positive), opts.level)
        row: dict[str, Any] = {
            "rater": m.raters[r],
            "rater_group": m.groups[r],
            "group": g,
            "leave_self_out": inside,
            "n": int(block[:, 0].sum()),
        }
        for j, name in enumerate(("accuracy", "precision", "recall", "f1")):
            row[name] = _stat(point[j], cis[j], "undefined (no positive item or prediction)")
        rows.append(row)
    return rows, how


def agreement_report(
    ratings: RatingSet,
    order: Sequence[str] | None = None,
    opts: AgreeOptions | None = None,
    judges: Sequence[str] = (),
    admissibility_opts: AdmissibilityOptions | None = None,
    tiers: Mapping[str, str] | None = None,
    expert: str | None = None,
) -> dict[str, Any]:
    """Every agreement statistic of a rating set, with seeded percentile bootstrap intervals over items; with a
    judge (a rater named in `judges`, or any rater outside the human group) and humans, its admissibility; with an
    `expert` (a human rater), also the alt-test's single-expert variant (`agreement.single_expert`)."""
    opts = opts or AgreeOptions()
    if opts.n_resamples < 1 or not 0 < opts.level < 1:
        raise ConfigError("--resamples must be >= 1 and --level between 0 and 1")
    m = build_matrix(ratings, order)
    notes: list[str] = []
    if not m.ordered:
        notes.append(
            "labels have no order (give --order, or use integer labels): weighted kappas and "
            "ordinal/interval alpha are not reported; string labels are never ordered alphabetically"
        )
    core, counts = _core(m, opts)
    report: dict[str, Any] = {
        "sources": ratings.sources,
        "categories": list(m.categories),
        "scale": m.scale,
        "missing_ratings": dict(sorted(ratings.missing.items())),
        **core,
    }
    if len(m.raters) < 2:
        notes.append("only one rater: no pairwise or group statistics")
    single = int((counts.sum(axis=1) == 1).sum())
    if single:
        notes.append(f"{single} item(s) have a single rating: they count for majority/F1 only, not for agreement")
    pairs, by_kind, no_overlap = _pairwise(m, opts)
    if no_overlap:
        notes.append(f"{no_overlap} rater pair(s) share no item and have no Cohen's kappa")
    report["pairwise_cohen_kappa"] = pairs
    report["cohen_kappa_by_pair_type"] = by_kind
    report["vs_majority"], report["vs_majority_positive"] = _vs_majority(m, opts)
    report["groups"] = {}
    for g in sorted(set(m.groups)):
        cols = [r for r, gr in enumerate(m.groups) if gr == g]
        sub, _ = _core(m.subset(cols), opts)
        sub.pop("per_item")
        report["groups"][g] = sub
    judge_cols, human_cols = split_raters(m, judges)
    if judge_cols and human_cols:
        adm = admissibility_opts or AdmissibilityOptions()
        report["admissibility"] = admissibility(
            m, judge_cols, human_cols, replace(adm, n_resamples=opts.n_resamples, seed=opts.seed, level=opts.level),
            tiers)
    elif judges:
        raise ConfigError(f"--judge {judges[0]!r}: admissibility needs at least one human rater besides the judges; "
                          f"raters: {', '.join(m.raters)}")
    if expert is not None:
        if not judge_cols:
            raise ConfigError(f"--expert {expert!r}: no judge to test (name one with --rater, or give a run "
                              "directory)")
        from tailorbench.agreement.single_expert import single_expert

        adm = admissibility_opts or AdmissibilityOptions()
        report["single_expert"] = single_expert(m, judge_cols, human_cols, expert, adm)
    report["bootstrap"] = {
        "method": "percentile, resampling items",
        "n_resamples": opts.n_resamples,
        "seed": opts.seed,
        "level": opts.level,
    }
    report["notes"] = notes
    return report


def _fmt(stat: dict[str, Any] | float | None) -> str:
    if isinstance(stat, dict):
        value, ci = stat.get("value"), stat.get("ci") or [None, None]
        if value is None:
            return "undefined"
        if ci[0] is None:
            return f"{value:.3f}"
        return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
    return "undefined" if stat is None else f"{stat:.3f}"


def render_table(report: dict[str, Any]) -> list[RenderableType]:
    """Rich tables for the terminal: overall and per-group statistics, pairwise kappas, rater vs majority."""
    from rich.table import Table

    level = round(report["bootstrap"]["level"] * 100)
    overall = Table(title=f"Agreement ({level}% bootstrap CI, {report['bootstrap']['n_resamples']} resamples)")
    overall.add_column("statistic")
    scopes: list[tuple[str, dict[str, Any]]] = [("all", report), *report["groups"].items()]
    for name, _ in scopes:
        overall.add_column(name)

    def row(label: str, get: Any) -> None:
        overall.add_row(label, *[get(s) for _, s in scopes])

    row("items", lambda s: str(s["n_items"]))
    row("raters", lambda s: str(s["n_raters"]))
    row(
        "percent agreement",
        lambda s: _fmt({"value": s["percent_agreement"], "ci": s["percent_agreement_ci"]}),
    )
    row("Fleiss' kappa", lambda s: _fmt(s["fleiss_kappa"]))
    for c in report["categories"]:
        row(f"  kappa ({c})", lambda s, c=c: _fmt(s["fleiss_kappa"]["per_category"].get(str(c))))
    for lvl in ("nominal", "ordinal", "interval"):
        if lvl in report["krippendorff_alpha"]:
            row(f"alpha ({lvl})", lambda s, lvl=lvl: _fmt(s["krippendorff_alpha"][lvl]))
    out: list[RenderableType] = [overall]
    if report["cohen_kappa_by_pair_type"]:
        kinds = Table(title="Cohen's kappa, mean over rater pairs")
        for col in ("pair type", "pairs", "kappa", "linear", "quadratic"):
            kinds.add_column(col)
        for kind, e in report["cohen_kappa_by_pair_type"].items():
            kinds.add_row(
                kind,
                str(e["n_pairs"]),
                _fmt(e["kappa"]),
                _fmt(e.get("kappa_linear", {"value": None})) if "kappa_linear" in e else "-",
                _fmt(e.get("kappa_quadratic", {"value": None})) if "kappa_quadratic" in e else "-",
            )
        out.append(kinds)
    if report["pairwise_cohen_kappa"]:
        pairs = Table(title="Cohen's kappa per rater pair")
        for col in ("a", "b", "n", "kappa"):
            pairs.add_column(col)
        for p in report["pairwise_cohen_kappa"]:
            pairs.add_row(p["a"], p["b"], str(p["n"]), _fmt({"value": p["kappa"], "ci": p["ci"]}))
        out.append(pairs)
    if report["vs_majority"]:
        vs = Table(title=f"Rater vs group majority ({report['vs_majority_positive']})")
        for col in ("rater", "vs group", "n", "accuracy", "precision", "recall", "F1"):
            vs.add_column(col)
        for v in report["vs_majority"]:
            who = v["group"] + (" (others)" if v["leave_self_out"] else "")
            vs.add_row(v["rater"], who, str(v["n"]), *[_fmt(v[x]) for x in ("accuracy", "precision", "recall", "f1")])
        out.append(vs)
    if report.get("admissibility"):
        out.extend(admissibility_tables(report["admissibility"]))
    if report.get("single_expert"):
        out.append(single_expert_table(report["single_expert"]))
    return out


def single_expert_table(block: dict[str, Any]) -> RenderableType:
    """The single-expert alt-test: a row per judge and human (the expert's labels the only reference)."""
    from rich.table import Table

    o = block["options"]
    table = Table(title=f"Single-expert alt-test (expert: {block['expert']}; epsilon={o['epsilon']}, BY q={o['q']}, "
                        f">= {o['min_items']} shared items, {o['alignment']})")
    for col in ("judge", "human", "items", "rho_f", "rho_h", "p (BY)", "judge wins", "omega", "passed"):
        table.add_column(col)
    for judge, res in block["judges"].items():
        omega = "undefined" if res["winning_rate"] is None else f"{res['winning_rate']:.2f}"
        passed = "untested" if res["passed"] is None else "yes" if res["passed"] else "no"
        for r in res["humans"]:
            if "p" not in r:
                table.add_row(judge, r["human"], str(r["n"]), "", "", "", r.get("excluded", ""), omega, passed)
                continue
            table.add_row(judge, r["human"], str(r["n"]), f"{r['rho_f']:.3f}", f"{r['rho_h']:.3f}",
                          f"{r['p_adjusted']:.3g}", "yes" if r["rejected"] else "no", omega, passed)
    return table


def admissibility_tables(adm: dict[str, Any]) -> list[RenderableType]:
    """The admissibility of each judge (alt-test and kappas) and the alt-test per left-out human."""
    from rich.table import Table

    judge_rows, human_rows, sentences = render_rows(adm)
    judge_header, human_header = headers(adm)
    o = adm["options"]
    judges = Table(title=f"Human admissibility (alt-test: epsilon={o['epsilon']}, BY q={o['q']}, "
                         f">= {o['min_items']} shared items per human, {o['alignment']})")
    for col in judge_header:
        judges.add_column(col)
    for row in judge_rows:
        judges.add_row(*row)
    humans = Table(title="Alt-test per left-out human (H0: rho_h - rho_f >= epsilon)")
    for col in human_header:
        humans.add_column(col)
    for row in human_rows:
        humans.add_row(*row)
    return [judges, humans, *sentences]
