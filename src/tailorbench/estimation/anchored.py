"""`tailor estimate RUN`: the three estimates per split × tier, split and overall, from runs and people's labels.

Which design the labels came from decides the estimator (`cells.three_estimates`): the labelled items' plan
entries (one design for all of them), or, with none, a uniform sample the user vouches for
(`assume_uniform`). Items a plan drew that nobody labelled are counted in a note: the estimate treats them as not
drawn, which keeps it valid only if they went unlabelled for reasons unrelated to their labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailorbench.errors import ConfigError, shown
from tailorbench.estimation.cells import CellEstimate, cross_estimates, three_estimates
from tailorbench.estimation.items import RATINGS, Folds, Items, read_folds, read_items
from tailorbench.estimation.labels import HumanLabels, PlanEntry, read_labels
from tailorbench.estimation.ppi import Interval
from tailorbench.estimation.records import CellRecord, EstimateReport, IntervalRecord
from tailorbench.schema import in_declared_order

__all__ = ["estimate_items", "estimate_runs"]


def _record(interval: Interval | None) -> IntervalRecord | None:
    if interval is None:
        return None
    return IntervalRecord(estimate=interval.estimate, se=interval.se, ci=(interval.lo, interval.hi),
                          lam=interval.lam)


def _cell(label: str, est: CellEstimate) -> CellRecord:
    proxy = _record(est.proxy_only)
    assert proxy is not None
    return CellRecord(cell=label, n_items=est.n_items, n_labels=est.n_labels, human_only=_record(est.human_only),
                      proxy_only=proxy, anchored=_record(est.anchored), effective_labels=est.effective_labels,
                      note=est.note)


def _design(items: Items, labels: HumanLabels, labeled: np.ndarray, assume_uniform: bool
            ) -> tuple[str, np.ndarray, list[str]]:
    """(design, inclusion probability per item, notes) from the labelled items' plan entries."""
    notes: list[str] = []
    entries = [labels.plan.get(c) for c, lab in zip(items.ids, labeled) if lab]
    known = [e for e in entries if e is not None]
    if not known:
        if not assume_uniform:
            raise ConfigError("the labels carry no inclusion probabilities (no sampling plan): name the plan "
                              "with --sample PLAN, or say the labelled items were a uniform random sample with "
                              "--assume-uniform")
        notes.append("assumed: the labelled items are a uniform random sample of the cases (--assume-uniform); "
                     "no sampling plan gave their inclusion probabilities")
        return "uniform", np.full(len(items.ids), labeled.mean()), notes
    if len(known) < len(entries):
        raise ConfigError(f"{len(entries) - len(known)} labelled item(s) are not in the sampling plan: an "
                          "estimate mixing planned and unplanned labels has no valid weights")
    designs = {e.sampling for e in known}
    if len(designs) > 1:
        raise ConfigError(f"the labelled items come from several sampling designs ({', '.join(sorted(designs))})")
    design = designs.pop()
    pi = np.ones(len(items.ids))
    for k, (case, lab) in enumerate(zip(items.ids, labeled)):
        entry = labels.plan.get(case)
        if lab and entry is not None:
            pi[k] = entry.inclusion_probability
            cell = f"{items.split[k]}/{items.tier[k]}"
            if design == "stratified" and entry.stratum != cell:
                raise ConfigError(f"the sampling plan puts case {shown(case)} in stratum {shown(entry.stratum)} "
                                  f"but its split/tier is {shown(cell)}: a stratified estimate needs the plan's "
                                  "strata to be the cases' split/tier")
    drawn = sum(1 for c in labels.plan if c not in labels.values)
    if drawn:
        notes.append(f"{drawn} item(s) of the sampling plan have no human label: treated as not drawn (valid if "
                     "they went unlabelled for reasons unrelated to what people would say)")
    return design, pi, notes


def _check_library(cells: list[tuple[str, np.ndarray]], items: Items, y: np.ndarray, labeled: np.ndarray,
                   alpha: float, folds: Folds | None = None) -> float:
    """Max |bound − ppi-python's `ppi_mean_ci` (`crossppi_mean_ci` for a cross-fitted proxy)| over the given
    cells (the uniform design's)."""
    from tailorbench.errors import require_extra

    require_extra("ppi_py", "estimate", "--check-library")
    import ppi_py

    from tailorbench.estimation.ppi import ppi_mean

    worst = 0.0
    for _, mask in cells:
        lab, unl = mask & labeled, mask & ~labeled
        if lab.sum() < 2 or not unl.any() or np.var(items.yhat[mask]) == 0.0:
            continue  # no interval, or a constant proxy the library cannot tune λ for (0 / 0)
        if folds is not None:
            est = cross_estimates(y[mask], folds.yhat[mask], folds.trained[mask], labeled[mask], alpha).anchored
            if est is None:
                continue
            held = ~folds.trained[lab]
            oof = (folds.yhat[lab] * held).sum(axis=1) / held.sum(axis=1)
            lo, hi = ppi_py.crossppi_mean_ci(y[lab], oof, folds.yhat[unl], alpha=alpha)
            worst = max(worst, abs(est.lo - float(np.squeeze(lo))), abs(est.hi - float(np.squeeze(hi))))
            continue
        ours = ppi_mean(y[lab], items.yhat[lab], items.yhat[unl], alpha)
        lo, hi = ppi_py.ppi_mean_ci(y[lab], items.yhat[lab], items.yhat[unl], alpha=alpha)
        worst = max(worst, abs(ours.lo - float(np.squeeze(lo))), abs(ours.hi - float(np.squeeze(hi))))
    return worst


def estimate_runs(system: Path, proxy: Path | Sequence[Path] | None, labels_source: str | Path,
                  sample: Path | None = None, versus: Path | None = None, assume_uniform: bool = False,
                  level: float = 0.95, check_library: bool = False,
                  plan: dict[str, PlanEntry] | None = None) -> EstimateReport:
    """The estimate of `system` against `proxy` from people's labels (`labels_source`), the inclusion
    probabilities from the plan file `sample`, from `plan` (entries a caller drew itself), or assumed uniform.
    Several proxy runs are the fold models of a proxy cross-fitted on people's labels (crossppi)."""
    proxies = [] if proxy is None else [proxy] if isinstance(proxy, Path) else list(proxy)
    items = read_items(system, proxies[0] if proxies else None, versus)
    folds = read_folds(system, items, proxies) if len(proxies) > 1 else None
    if folds is not None:
        items.yhat = folds.yhat.mean(axis=1)
    labels = read_labels(labels_source, items.kind == "pairwise", set(items.ids), sample, plan)
    return estimate_items(items, labels, str(system), None if not proxies else ", ".join(str(p) for p in proxies),
                          None if versus is None else str(versus), assume_uniform, level, check_library, folds)


def estimate_items(items: Items, labels: HumanLabels, system: str, proxy: str | None = None,
                   versus: str | None = None, assume_uniform: bool = False, level: float = 0.95,
                   check_library: bool = False, folds: Folds | None = None) -> EstimateReport:
    """The three estimates per cell of items and people's labels already read (what `estimate_runs` computes
    once it has read the runs; a caller that builds its own items, e.g. a study's stage 3 whose people see
    whole tasks, calls it directly). `system`, `proxy` and `versus` name the sources in the report."""
    labeled = np.array([c in labels.values for c in items.ids], dtype=bool)
    share = np.array([labels.values.get(c, 0.0) for c in items.ids], dtype=float)
    y = np.where(labeled, items.human_value(share), 0.0)
    design, pi, notes = _design(items, labels, labeled, assume_uniform)
    strata = np.array([f"{s}/{t}" for s, t in zip(items.split, items.tier)], dtype=object)
    alpha = 1.0 - level
    masks: list[tuple[str, np.ndarray]] = []
    if items.kind == RATINGS:  # a ratings file has no splits or tiers: one cell
        splits = []
    else:
        splits = in_declared_order(items.splits, items.split.tolist())
    tiers = in_declared_order(items.tiers, items.tier.tolist())
    for split in splits:
        if not (items.split == split).any():
            continue
        for tier in tiers:
            mask = (items.split == split) & (items.tier == tier)
            if mask.any():
                masks.append((f"{split}/{tier}", mask))
        masks.append((f"{split}/all", items.split == split))
    masks.append(("all", np.ones(len(items.ids), dtype=bool)))
    if folds is not None and design != "uniform":
        raise ConfigError(f"a cross-fitted proxy (several --proxy runs) takes a uniform sample; these labels "
                          f"come from a {design} one")
    try:
        cells = [_cell(label, three_estimates(y[m], items.yhat[m], labeled[m], pi[m], design, strata[m], alpha)
                       if folds is None else cross_estimates(y[m], folds.yhat[m], folds.trained[m], labeled[m],
                                                             alpha))
                 for label, m in masks]
    except ValueError as exc:
        raise ConfigError(f"--proxy: {exc}") from None
    if folds is not None:
        notes.append(f"the proxy is cross-fitted: {len(folds.runs)} fold runs; each labelled case's proxy label "
                     "comes from the folds not trained on it (crossppi)")
    raters = sorted(set(labels.raters.values()))
    if len(raters) > 1 or raters != [1]:
        notes.append(f"raters per labelled item: {raters[0]}-{raters[-1]}; aggregated by the {labels.aggregation}")
    library = (_check_library(masks, items, y, labeled, alpha, folds) if check_library and design == "uniform"
               else None)
    if check_library and design != "uniform":
        notes.append(f"--check-library: ppi-python has no {design} design; the coverage simulation is its check")
    return EstimateReport(kind=items.kind, estimand=items.estimand, system=system, proxy=proxy, versus=versus,
                          labels=labels.source, aggregation=labels.aggregation, design=design,
                          assumed_uniform=not any(labels.plan.get(c) for c in labels.values),
                          level=level, n_items=len(items.ids), n_labels=int(labeled.sum()), cells=cells,
                          library_check=library, notes=[*items.notes, *labels.notes, *notes])
