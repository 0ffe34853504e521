"""Round trip through a real Potato 2 server: tailorbench's export (config + data file), two annotators who
register and label every instance over HTTP as the page does (`/register`, `/annotate`, `/updateinstance`), and
the project folder Potato wrote read back with `tailorbench.interop.read_export`; labels and kappas must equal
those of the same labels given directly.

Potato (2.12.1, PyPI `potato-annotation`) runs from its own virtual environment under
~/.cache/tailorbench/potato-venv (created here on first use; never the project's). The exported config binds
127.0.0.1 (`host`), and the script checks the server's listening sockets in /proc before any request. The
config must pass `potato validate --strict` (no unknown or deprecated keys). For each of the four task types:
one project, two annotators, every unit labelled (the answer's side or score drawn from the unit's swap in the
export's key file, which the annotators here read to play the truth and Potato never serves). Blind exports: every
`/annotate` page the server sends is searched for tailorbench's unit fields (`tb_unit`, `tb_item`, `tb_task`,
`tb_swap`) and the word "swap" (`served_clean`).

Run: .venv/bin/python perf/potato_roundtrip.py [--out result.json] [--save DIR]
(`--save DIR` keeps each project folder, as tests/interop/data/potato2_* were made.)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from tailorbench.agreement import AgreeOptions, agreement_report
from tailorbench.agreement.records import Label, Rating, RatingSet
from tailorbench.interop import export_items, read_export

sys.path.insert(0, str(Path(__file__).resolve().parent))
from listening import check_loopback, free_port, wait_healthy
from listening import ensure_venv as make_venv

VERSION = "2.12.1"
ITEMS = Path(__file__).resolve().parents[1] / "tests" / "annotation" / "data"
TASKS = ("pairwise", "attributes", "relevance", "ab_rating")
ANNOTATORS = ("alice", "bob")
SPACE: dict[str, list[Label]] = {"pairwise": ["A", "B"], "attributes": ["accepted", "uncertain", "rejected"],
                                 "relevance": [True, False], "ab_rating": [-2, -1, 0, 1, 2]}
STATISTICS = ("fleiss_kappa", "krippendorff_alpha", "pairwise_cohen_kappa")


def ensure_venv() -> Path:
    return make_venv("potato-venv", f"potato-annotation=={VERSION}", "potato")


def clicked(task: str, swap: bool, label: Label) -> dict[str, str]:
    """The `schema:::label` keys the page posts for an annotator who means `label`."""
    if task == "pairwise":
        first = (label == "B") if swap else (label == "A")
        side = "Answer 1" if first else "Answer 2"
        return {f"choice:::{side}": side, "confidence:::2": "2"}
    if task == "attributes":
        return {f"judgment:::{label}": str(label)}
    if task == "relevance":
        word = "yes" if label else "no"
        return {f"relevant:::{word}": word}
    assert isinstance(label, int)
    score = str(3 - label if swap else 3 + label)
    return {f"score:::{score}": score}


UNIT_FIELDS = ("tb_unit", "tb_item", "tb_task", "tb_swap", "swap")


def annotate(base: str, user: str, key: dict[str, dict[str, Any]], task: str, rng: random.Random,
             truth: dict[str, Label], labels: dict[tuple[str, str], Label], pages: list[bool]) -> None:
    """One annotator labels every instance; `pages` gets, per page served, whether it held no unit field."""
    done: set[str] = set()
    with httpx.Client(base_url=base, timeout=60, follow_redirects=True) as client:
        client.post("/register", data={"email": user, "pass": f"pw-{user}-0123"}).raise_for_status()
        for _ in range(len(key) + 1):
            page = client.get("/annotate").text
            pages.append(not any(f in page for f in UNIT_FIELDS))
            found = re.search(r'id="instance_id"[^>]*value="([^"]+)"', page)
            if found is None or found.group(1) in done:
                return
            ref = found.group(1)  # the instance id is the opaque reference
            done.add(ref)
            unit = key[ref]
            label = truth[ref] if rng.random() < 0.7 else rng.choice(SPACE[task])
            labels[unit["tb_unit"], user] = label
            client.post("/updateinstance", json={"instance_id": ref, "annotations": clicked(
                task, unit["tb_swap"], label)}).raise_for_status()
            client.post("/annotate", json={"action": "next_instance", "instance_id": ref}).raise_for_status()


def run_task(exe: Path, task: str, work: Path, rng: random.Random, save: Path | None) -> dict[str, Any]:
    project = work / task
    summary = export_items(ITEMS / f"{task}.jsonl", task, "potato", project, seed=11)
    validate = subprocess.run([str(exe), "validate", "--strict", "config.yaml"], cwd=project, capture_output=True,
                              text=True)
    port = free_port()
    config = yaml.safe_load((project / "config.yaml").read_text(encoding="utf-8"))
    config["port"] = port
    (project / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    key = json.loads((project / "tailorbench-key.json").read_text(encoding="utf-8"))["units"]
    truth = {ref: rng.choice(SPACE[task]) for ref in key}
    pages: list[bool] = []
    labels: dict[tuple[str, str], Label] = {}
    log = (work / f"{task}-server.log").open("wb")
    proc = subprocess.Popen([str(exe), "start", "config.yaml", "-p", str(port)], cwd=project, stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        started_s = wait_healthy(base, proc, "potato")
        sockets = check_loopback(proc.pid, "potato")
        t0 = time.perf_counter()
        for user in ANNOTATORS:
            annotate(base, user, key, task, rng, truth, labels, pages)
        annotate_s = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    ratings, report = read_export(project)
    if save:
        kept = save / f"potato2_{task}"  # what the reader needs, not Potato's caches, layouts or password file
        shutil.copytree(project, kept, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            "*.log", "pocket", "layouts", "project.sqlite*", "user_config.json"))
        (kept / "labels_given.json").write_text(json.dumps(
            [[item, rater, label] for (item, rater), label in sorted(labels.items())]) + "\n", encoding="utf-8")
    got = {(r.item, r.rater): r.label for r in ratings.ratings}
    direct = RatingSet(ratings=[Rating(item, rater, label) for (item, rater), label in labels.items()])
    order = ["rejected", "uncertain", "accepted"] if task == "attributes" else None
    opts = AgreeOptions(200, 0)
    mine, want = agreement_report(ratings, order, opts), agreement_report(direct, order, opts)
    return {"task": task, "units": summary["units"], "swapped": summary["swapped"], "annotations": len(labels),
            "validate_strict_rc": validate.returncode, "validate": validate.stdout.strip().splitlines()[-1:],
            "listening": sockets, "started_s": round(started_s, 1), "annotate_s": round(annotate_s, 1),
            "served_clean": all(pages) and bool(pages),
            "labels_equal": got == labels, "fleiss_kappa": mine["fleiss_kappa"]["value"],
            "kappas_equal": all(mine[k] == want[k] for k in STATISTICS), "not_rated": dict(report.not_rated),
            "unmappable": report.unmappable, "sources": [Path(s).name for s in report.sources]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="Write the result JSON here too.")
    parser.add_argument("--save", type=Path, help="Keep each project folder (config, data, Potato's output) here.")
    args = parser.parse_args()
    t0 = time.perf_counter()
    exe = ensure_venv()
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        results = [run_task(exe, task, Path(tmp), rng, args.save) for task in TASKS]
    out = {"potato": VERSION, "total_s": round(time.perf_counter() - t0, 1), "results": results}
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if not all(r["labels_equal"] and r["kappas_equal"] and not r["unmappable"] and r["validate_strict_rc"] == 0
               for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
