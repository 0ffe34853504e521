"""Human-anchored estimates on the development PersonaFeedback cases (General split, 2,287 cases).

The system under test is the `embedding` judge; the proxy standing in for people is `longer` (informative: it
agrees with people ~73% of the time here) or `random` (uninformative). People's labels are the benchmark's own
(`chosen`), revealed on a seeded 20% of the cases, 100 times (uniform reveals; the same reveals for both proxies,
and again as stratified-by-tier reveals of the same size). For each draw: the human-only and the anchored (PPI++)
95% intervals of the embedding judge's accuracy against people, checked against its full-label accuracy (every
label revealed). Printed: how many of the draws each interval covers, the median widths, the median ratio
anchored / human-only width, and the median number of human labels the proxy was worth.

Run (about 4 minutes of CPU for the three `tailor eval` runs, then seconds):
    .venv/bin/python perf/estimate_dev.py --data ../shared/data/personafeedback-general-dev \
        --runs /tmp/estimate_dev/runs
An existing --runs folder holding the three runs is reused.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tailorbench.estimation.cells import three_estimates
from tailorbench.estimation.items import read_items
from tailorbench.estimation.sampling import draw

JUDGES = ("embedding", "longer", "random")


def _runs(data: Path, runs: Path) -> dict[str, Path]:
    found = {j: runs / f"{j}__persona" for j in JUDGES}
    if not all((p / "results.json").is_file() for p in found.values()):
        tailor = Path(sys.executable).with_name("tailor")
        cmd = [str(tailor), "eval", "--data", str(data), *(a for j in JUDGES for a in ("--judge", j)),
               "--out", str(runs)]
        print("running:", " ".join(cmd), flush=True)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        print(f"tailor eval: {time.perf_counter() - start:.0f} s", flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/personafeedback-general-dev"))
    parser.add_argument("--runs", type=Path, default=Path("/tmp/estimate_dev/runs"))
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--share", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    runs = _runs(args.data, args.runs)
    for proxy in ("longer", "random"):
        items = read_items(runs["embedding"], runs[proxy])
        y = items.human_value(np.ones(len(items.ids)))  # every case's label revealed: chosen is people's choice
        truth = float(y.mean())
        strata = np.array([f"{s}/{t}" for s, t in zip(items.split, items.tier)], dtype=object)
        n = round(args.share * len(y))
        agree = float(np.mean(items.yhat))
        corr = float(np.corrcoef(y, items.yhat)[0, 1])
        print(f"\nsystem embedding, proxy {proxy}: {len(y)} cases, full-label accuracy {truth:.4f}, "
              f"proxy-only {agree:.4f}, corr(Y, Yhat) {corr:.3f}; {args.draws} draws of {n} labels")
        for design in ("uniform", "stratified"):
            cover = {"human": 0, "anchored": 0, "proxy": 0}
            widths: dict[str, list[float]] = {"human": [], "anchored": []}
            ratio, worth = [], []
            for k in range(args.draws):
                rng = np.random.default_rng([args.seed, k])
                sample = draw(design, n, rng, strata=strata, size=len(y))
                cell = three_estimates(y, items.yhat, sample.labeled, sample.pi, design, strata)
                assert cell.human_only is not None and cell.anchored is not None
                for name, iv in (("human", cell.human_only), ("anchored", cell.anchored),
                                 ("proxy", cell.proxy_only)):
                    cover[name] += iv.lo <= truth <= iv.hi
                widths["human"].append(cell.human_only.hi - cell.human_only.lo)
                widths["anchored"].append(cell.anchored.hi - cell.anchored.lo)
                if widths["human"][-1] > 0:
                    ratio.append(widths["anchored"][-1] / widths["human"][-1])
                worth.append(cell.effective_labels or 0.0)
            print(f"  {design:10s} covers truth: anchored {cover['anchored']}/{args.draws}, human-only "
                  f"{cover['human']}/{args.draws}, proxy-only {cover['proxy']}/{args.draws}; median width "
                  f"anchored {np.median(widths['anchored']):.4f}, human-only {np.median(widths['human']):.4f}, "
                  f"median ratio {np.median(ratio):.4f}; median labels worth {np.median(worth):.0f} (of {n})")


if __name__ == "__main__":
    main()
