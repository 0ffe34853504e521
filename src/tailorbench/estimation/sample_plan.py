"""`tailor estimate sample`: which cases people should label, written as an annotation import.

The plan is a PairCase JSONL file (`tailor annotate import` reads it; answer A is the case's `chosen`), one line per
drawn case, whose `meta.estimate_plan` records the design, the case's inclusion probability and its stratum
(split/tier): the import keeps it in the item, the export writes it back in items.jsonl, and `tailor estimate`
reads the weights from there (or from this file, `--sample PLAN`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tailorbench.errors import ConfigError
from tailorbench.estimation.labels import PLAN_KEY, PlanEntry
from tailorbench.estimation.records import SampleReport
from tailorbench.estimation.sampling import DESIGNS, Draw, draw, uncertainty_from_margin
from tailorbench.registry import did_you_mean

__all__ = ["plan_entries", "write_sample"]


def write_sample(data: str, out: Path, sampling: str = "stratified", n: int | None = None,
                 share: float | None = None, proxy: Path | None = None, seed: int = 0) -> SampleReport:
    """Draw the sample and write it to `out` (claimed by the caller before any work)."""
    from tailorbench.datasets.benchmark import Benchmark
    from tailorbench.datasets.loader import load_benchmark
    from tailorbench.datasets.native import write_benchmark
    from tailorbench.estimation.items import proxy_margins

    if sampling not in DESIGNS:
        raise ConfigError(f"--sampling must be one of {', '.join(DESIGNS)}, got {sampling!r}"
                          f"{did_you_mean(sampling, DESIGNS)}")
    if (n is None) == (share is None):
        raise ConfigError("give the size of the sample with exactly one of --size and --share")
    if sampling == "active" and proxy is None:
        raise ConfigError("--sampling active draws by the proxy's uncertainty: name the proxy with --proxy RUN")
    bench = load_benchmark(data)
    cases = bench.cases
    if not cases:
        raise ConfigError(f"--data {data} holds no case")
    size = n if n is not None else round((share or 0.0) * len(cases))
    if not 2 <= size <= len(cases):
        raise ConfigError(f"the sample must hold 2 to {len(cases)} cases (the benchmark's), got {size}")
    notes: list[str] = []
    strata = np.array([f"{c.split}/{c.tier}" for c in cases], dtype=object)
    uncertainty = None
    design = sampling
    margins = proxy_margins(proxy, [c.id for c in cases]) if proxy is not None else None
    if proxy is not None and sampling != "active":
        notes.append(f"--proxy {proxy} was read and checked; a {sampling} sample does not use it")
    if sampling == "active":
        if margins is None:
            notes.append(f"the proxy {proxy} gives no scores to measure its uncertainty: drew a stratified "
                         "sample instead of an active one")
            design = "stratified"
        else:
            uncertainty = uncertainty_from_margin(margins)
    sample = draw(design, size, np.random.default_rng(seed), strata=strata, uncertainty=uncertainty,
                  size=len(cases))
    picked = []
    for k in np.flatnonzero(sample.labeled):
        case = cases[int(k)]
        entry = {"sampling": design, "inclusion_probability": float(sample.pi[k]), "stratum": str(strata[k]),
                 "seed": seed}
        picked.append(case.model_copy(update={"meta": {**case.meta, PLAN_KEY: entry}}))
    write_benchmark(Benchmark(str(out), "native", picked, splits=bench.splits, tiers=bench.tiers), out)
    counts: dict[str, int] = {}
    for k in np.flatnonzero(sample.labeled):
        counts[str(strata[k])] = counts.get(str(strata[k]), 0) + 1
    return SampleReport(out=str(out), sampling=design, requested=sampling,
                        items=len(cases), sampled=len(picked), expected_labels=float(sample.pi.sum()),
                        strata=counts, seed=seed, notes=notes)


def plan_entries(ids: list[str], sample: Draw, strata: np.ndarray | None = None) -> dict[str, PlanEntry]:
    """The plan entries of the drawn items of `sample` (for a caller that draws and labels items itself, e.g. a
    study's stage: `anchored.estimate_runs(..., plan=...)` reads them as it reads a plan file's)."""
    return {ids[k]: PlanEntry(sample.design, float(sample.pi[k]), "all" if strata is None else str(strata[k]))
            for k in np.flatnonzero(sample.labeled)}
