"""The reliability table and the per-tier paired comparison on real data: the bundled demo and the development
PersonaFeedback cases in ../shared/data (2,287 human-annotated General-split cases), for a length baseline
(`longer`), the embedding judge (`embedding`, all-MiniLM-L6-v2 shipped in a package) and a reward model
(`rm:PATH`, by default the tiny test reward model `make test` builds under ~/.cache/tailorbench/models:
illustrative figures of an untrained scorer, not a finding about reward models). Prints, per data set and judge,
the overall reliability cell and each tier's flip rate / P(first) / P(longer) / ECE, then `tailor compare` of
each judge against `longer` per tier; writes the merged report and a static viewer bundle and checks that the
report and the viewer's page both carry the reliability table.

    .venv/bin/python perf/reliability_dev.py [--out runs/reliability-dev] [--rm PATH] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import tailorbench as tb

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "personafeedback-general-dev"
CACHE = Path(os.environ.get("TAILORBENCH_CACHE", Path.home() / ".cache" / "tailorbench"))
TINY_RM = CACHE / "models" / "tiny-seqcls-hf"


def _f(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def cell_line(name: str, cell: dict[str, Any]) -> str:
    pos, length, cal = cell["position"], cell["length"], cell.get("calibration") or {}
    return (f"  {name:<15} cases {cell['cases']:>5}  flip {_f(pos['flip_rate'])}  "
            f"P(first) {_f(pos['p_first']['value'])} [{_f(pos['p_first']['ci'][0])}, {_f(pos['p_first']['ci'][1])}]"
            f"  P(longer) {_f(length['p_longer']['value'])}  ECE {_f(cal.get('ece'))}")


def run(data: str, label: str, judges: list[str], out: Path, limit: int | None) -> dict[str, Any]:
    start = time.perf_counter()
    results = tb.eval(data, judges, ["persona"], out=out, limit=limit, task="pairwise")
    seconds = time.perf_counter() - start
    print(f"\n== {label}: {len(judges)} judges in {seconds:.1f} s -> {out}")
    figures: dict[str, Any] = {"data": label, "seconds": round(seconds, 1), "judges": {}}
    for res in results:
        cells = res.reliability["cells"]
        print(f"{res.judge}  (accuracy {res.metrics['all']['accuracy']:.3f}, probability: "
              f"{res.reliability['probability']})")
        print(cell_line("all", cells["all"]))
        for split, block in cells.items():
            if split == "all":
                continue
            for tier, cell in block.items():
                print(cell_line(f"{split}/{tier}", cell))
        figures["judges"][res.judge] = {"accuracy": res.metrics["all"]["accuracy"], "all": cells["all"]}
    base = next(r for r in results if r.judge == "longer")
    for res in results:
        if res is base:
            continue
        cmp = tb.compare(str(res.run_dir), str(base.run_dir))
        print(f"compare {res.judge} - longer: {cmp.difference:+.3f} [{_f(cmp.ci[0])}, {_f(cmp.ci[1])}], McNemar "
              f"p {_f(cmp.mcnemar.get('p'))} on {cmp.n} cases")
        for c in cmp.cells:
            if c["cell"] != "all":
                print(f"  {c['cell']:<18} {c['difference']:+.3f} [{_f(c['ci'][0])}, {_f(c['ci'][1])}]  n {c['n']}")
        figures["judges"][res.judge]["compare_to_longer"] = {c["cell"]: c["difference"] for c in cmp.cells}
    report = (out / "report.md").read_text(encoding="utf-8") if len(results) > 1 else ""
    viewer = tb.view([str(r.run_dir) for r in results], bundle=out / "bundle", serve=False)
    pages = " ".join(p.read_text(encoding="utf-8", errors="replace") for p in (out / "bundle").rglob("*.html"))
    checks = {"report_has_reliability": "## Reliability" in report, "viewer_has_reliability": "Reliability" in pages}
    print("checks:", json.dumps(checks), "viewer index:", getattr(viewer, "index", None))
    figures["checks"] = checks
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("runs/reliability-dev"))
    parser.add_argument("--rm", default=str(TINY_RM))
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    judges = ["longer", "embedding", f"rm:{args.rm}"]
    summary = [run("demo", "demo", judges, args.out / "demo", args.limit)]
    if DEV.is_dir():
        summary.append(run(str(DEV), "personafeedback-general-dev", judges, args.out / "pf-dev", args.limit))
    else:
        print(f"{DEV} is not here: the development data part is skipped")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if not all(all(s["checks"].values()) for s in summary):
        raise SystemExit("a report or the viewer lacks the reliability table")


if __name__ == "__main__":
    main()
