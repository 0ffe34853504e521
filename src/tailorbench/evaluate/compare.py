"""`tailor compare A B [C ...]`: paired comparisons of runs on the cases they share, overall and per split x tier
(docs/metrics.md, "Comparing runs").

Each run's per-case scores come from its run kind (`RunKind.case_scores`: a pairwise run's accuracy score, a
gen-eval run's win score), so pairwise and gen-eval runs compare the same way. For every cell: the mean paired
difference with its bootstrap interval over cases and, when the cases have users, over users (whole users
resampled); the exact McNemar test on the discordant cases (a case counts for the run whose score on it is
higher); the counts. With more than two runs each is compared with the first and the p-values of a cell are
Holm-adjusted over those comparisons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.bootstrap import N_BOOT, bootstrap_ci, paired_difference, seed_for
from tailorbench.errors import ConfigError
from tailorbench.run_kinds import RUN_KINDS, read_manifest, run_kind
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, benchmark_names, in_declared_order

Scores = dict[str, tuple[float, str, str, str]]


def mcnemar_exact(a_only: int, b_only: int) -> float | None:
    """Two-sided exact McNemar p-value: the binomial test of `a_only` successes in `a_only + b_only` discordant
    cases at 1/2 (twice the smaller tail, at most 1), in exact integer arithmetic."""
    n = a_only + b_only
    if n == 0:
        return None
    k = min(a_only, b_only)
    tail, term = 0, 1
    for i in range(k + 1):  # sum of C(n, i) for i <= k
        tail += term
        term = term * (n - i) // (i + 1)
    return min(1.0, 2 * tail / 2**n)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (missing p-values stay missing and do not count)."""
    present = sorted((p, k) for k, p in enumerate(p_values) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, k) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[k] = running
    return out


def _user_ci(diff: np.ndarray, users: np.ndarray, n_boot: int, seed: int) -> list[float] | None:
    """Interval of the pooled mean difference with whole users resampled (None with fewer than 2 users)."""
    if len(np.unique(users)) < 2:
        return None
    lo, hi = bootstrap_ci(diff, users, n_boot, seed)
    return [lo, hi]


def cell(a: Scores, b: Scores, ids: Sequence[str], label: str, n_boot: int, seed: int) -> dict[str, Any]:
    """Every figure of the comparison on one cell's shared cases."""
    result = paired_difference({c: a[c][0] for c in ids}, {c: b[c][0] for c in ids}, n_boot=n_boot,
                               seed=seed_for(seed, label))
    diff = np.array([a[c][0] - b[c][0] for c in ids])
    users = np.array([a[c][3] for c in ids], dtype=object)
    a_only, b_only = int((diff > 0).sum()), int((diff < 0).sum())
    return {"cell": label, **result,
            "ci_users": _user_ci(diff, users, n_boot, seed_for(seed, f"users/{label}")) if len(ids) else None,
            "n_users": len(np.unique(users)),
            "mcnemar": {"a_only": a_only, "b_only": b_only, "discordant": a_only + b_only,
                        "p": mcnemar_exact(a_only, b_only)}}


def compare_pair(a: Scores, b: Scores, names: Mapping[str, list[str]], n_boot: int, seed: int
                 ) -> list[dict[str, Any]]:
    """The cells of one comparison: split x tier, split, in the data's declared order, then `all`."""
    shared = sorted(set(a) & set(b))
    splits = in_declared_order(names.get("splits", DEFAULT_SPLITS), (a[c][1] for c in shared))
    tiers = in_declared_order(names.get("tiers", DEFAULT_TIERS), (a[c][2] for c in shared))
    out = []
    for split in splits:
        for tier in (*tiers, "all"):
            ids = [c for c in shared if a[c][1] == split and tier in ("all", a[c][2])]
            if ids:
                out.append(cell(a, b, ids, f"{split}/{tier}", n_boot, seed))
    out.append(cell(a, b, shared, "all", n_boot, seed))
    return out


def _label(manifest: Mapping[str, Any]) -> str:
    if manifest.get("kind") == "gen-eval":
        return f"{manifest.get('model')} vs {manifest.get('reference')} (judge {manifest.get('judge')})"
    return f"{manifest.get('judge')} / {manifest.get('setting')}"


def compare_runs(runs: Sequence[Path], n_boot: int = N_BOOT, seed: int = 0) -> dict[str, Any]:
    """Each run after the first compared with the first. Runs of different kinds or over different data (their
    dataset fingerprints differ), and runs sharing no case, are a ConfigError (exit 2) before anything is
    written."""
    if len(runs) < 2:
        raise ConfigError("compare needs at least two run directories")
    kinds = {run_kind(r) for r in runs}
    if len(kinds) > 1:
        raise ConfigError(f"cannot compare runs of different kinds ({', '.join(sorted(kinds))})")
    kind = RUN_KINDS.get(kinds.pop())
    if kind.case_scores is None:
        raise ConfigError(f"{runs[0]}: this kind of run has no per-case scores to compare")
    manifests = [read_manifest(r) for r in runs]
    prints = {str(m.get("dataset_fingerprint")) for m in manifests}
    if len(prints) > 1:
        raise ConfigError("the runs are over different data (dataset fingerprints "
                          f"{', '.join(sorted(p[:12] for p in prints))}): a paired comparison needs the same cases")
    scores = [kind.case_scores(r) for r in runs]
    names = benchmark_names(manifests[0].get("data_stats") or {})
    comparisons: list[dict[str, Any]] = []
    for k in range(1, len(runs)):
        if not set(scores[0]) & set(scores[k]):
            raise ConfigError(f"{runs[0]} and {runs[k]} share no judged case")
        comparisons.append({"a": _label(manifests[0]), "b": _label(manifests[k]), "run_a": str(runs[0]),
                            "run_b": str(runs[k]), "cells": compare_pair(scores[0], scores[k], names, n_boot, seed)})
    if len(comparisons) > 1:
        by_label: dict[str, list[dict[str, Any]]] = {}
        for comparison in comparisons:
            for c in comparison["cells"]:
                by_label.setdefault(c["cell"], []).append(c)
        for group in by_label.values():
            for c, p in zip(group, holm([c["mcnemar"]["p"] for c in group])):
                c["mcnemar"]["p_holm"] = p
    first = comparisons[0]
    overall = first["cells"][-1]
    return {"a": first["a"], "b": first["b"], **{k: v for k, v in overall.items() if k != "cell"},
            "cells": first["cells"], "comparisons": comparisons, "kind": manifests[0].get("kind", "pairwise"),
            "headline": compare_headline(comparisons)}


#: the level at which a Holm-adjusted p-value makes a difference significant in the headline
ALPHA = 0.05


def adjusted_p(cell: Mapping[str, Any]) -> float | None:
    """A cell's McNemar p-value Holm-adjusted over the comparisons (the raw one when there is one comparison:
    Holm over one test leaves it as it is)."""
    test = cell["mcnemar"]
    return test["p_holm"] if test.get("p_holm") is not None else test["p"]


def points(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:+.1f}"


def cell_figures(cell: Mapping[str, Any]) -> str:
    """A cell's difference, interval, cases and p-value as `tailor compare` prints them on the cell's own line."""
    lo, hi = cell["ci"]
    p = adjusted_p(cell)
    name = "Holm p" if cell["mcnemar"].get("p_holm") is not None else "p"
    return (f"{points(cell['difference'])} points [{points(lo)}, {points(hi)}] on {cell['n']} cases, "
            f"{name}={'–' if p is None else f'{p:.3g}'}")


def compare_headline(comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    """What `tailor compare` says first: for every comparison, whether its overall difference is significant
    after Holm's correction over the comparisons (exact McNemar test, 5% level), and which split x tier cells
    are (each cell Holm-adjusted over the comparisons, as its line prints it)."""
    holm_note = (f"Holm-adjusted over the {len(comparisons)} comparisons" if len(comparisons) > 1
                 else "one comparison, so Holm leaves p as it is")
    lines = [f"Headline (exact McNemar test on the discordant cases, {holm_note}; significant: adjusted p < "
             f"{ALPHA:g}):"]
    for comparison in comparisons:
        overall = comparison["cells"][-1]
        p = adjusted_p(overall)
        significant = p is not None and p < ALPHA
        better = ("" if not significant else
                  f" ({comparison['a'] if (overall['difference'] or 0) > 0 else comparison['b']} is better)")
        cells = [c for c in comparison["cells"][:-1] if (q := adjusted_p(c)) is not None and q < ALPHA]
        where = ("; significant cells: " + ", ".join(f"{c['cell']} {cell_figures(c)}" for c in cells)
                 if cells else "; no split x tier cell is significant")
        lines.append(f"  {comparison['a']} - {comparison['b']}: overall {cell_figures(overall)}: "
                     f"{'significant' if significant else 'not significant'}{better}{where}.")
    return lines
