"""Runner overhead: `tailor eval` with the `longer` judge on 50,000 generated cases, against a bare loop that
reads the same files with json.loads, compares lengths and writes the same prediction lines (same keys and
values) with json.dumps. Goal: runner throughput >= 0.5 of the bare loop.

Two layouts, one JSON line each: `mirror` (PersonaFeedback's release layout: light rows, personas in their own
files, as the real data comes) and `native` (PairCase JSONL with the persona embedded in every row: the
heaviest case). The runner's time covers everything `tailor eval` does: validation, manifest with data
statistics and fingerprint, judging, predictions, metrics with 1,000-resample bootstraps, and both reports.

`--shared F` makes a share F of the rows copies of earlier pairs (a third with the labels swapped), which the
loader keeps and the runner classifies by tier overlap (manifest `tier_overlap`, `by_overlap` in the metrics),
as on PersonaFeedback, whose dev data has F = 0.3.

The reliability table (results.json `reliability`) is part of the runner's time. Two figures of its cost on
10,000 cases (goal < 0.05): `with_over_without`, the runner's best time with the table over its best time with
the table left out (alternating runs in the same process), and `reliability_share`, what computing the table
alone costs on the same predictions (`reliability_s`, with the verdict columns the metrics read anyway) over
the rest of the runner's time.

    .venv/bin/python perf/eval_overhead.py [--cases 50000] [--repeat 3] [--shared 0.0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tailorbench.evaluate.reliability as reliability_module
from tailorbench.evaluate.columns import columns
from tailorbench.evaluate.reliability import reliability
from tailorbench.evaluate.results import read_predictions
from tailorbench.evaluate.runner import EvalConfig, run_eval

WORDS = "persona answer travel food music weekend budget family quiet train garden coffee".split()  # noqa: SIM905
USERS = 500


def personas(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"Name": f"user{u}", "Demographics": {"Age": 20 + u % 50, "Nationality": "X", "Career_Information": "job"},
         "Personality": {"Extraversion_or_Introversion": "EI"[u % 2], "Values_and_Interests": WORDS[: 3 + u % 5]},
         "Preference": {"Local_Life": {"Food_Drinks": " ".join(rng.choices(WORDS, k=30))}}}
        for u in range(USERS)
    ]


def rows(n: int, rng: random.Random, shared: float = 0.0) -> Iterator[dict[str, Any]]:
    """`shared`: the share of rows that copy an earlier row's pair (so another file holds it, as PersonaFeedback's
    tiers do), a third of them with the labels swapped."""
    earlier: list[dict[str, Any]] = []
    for i in range(n):
        if earlier and rng.random() < shared:
            old = rng.choice(earlier)
            swap = rng.random() < 1 / 3
            yield {**old, "i": i, "chosen": old["rejected"] if swap else old["chosen"],
                   "rejected": old["chosen"] if swap else old["rejected"]}
            continue
        chosen = " ".join(rng.choices(WORDS, k=rng.randint(40, 120)))
        rejected = " ".join(rng.choices(WORDS, k=rng.randint(40, 120)))
        row = {"i": i, "user": rng.randrange(USERS), "question": f"question {i}?", "chosen": chosen,
               "rejected": rejected if rejected != chosen else rejected + " extra"}
        earlier.append(row)
        yield row


def make_native(root: Path, n: int, shared: float = 0.0) -> list[Path]:
    rng = random.Random(0)
    profiles = personas(rng)
    path = root / "cases.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for r in rows(n, rng, shared):
            i = r["i"]
            handle.write(json.dumps({
                "id": f"c{i}", "split": ("general", "specific")[i % 2], "tier": ("easy", "medium", "hard")[i % 3],
                "user_id": f"user{r['user']}", "persona": profiles[r["user"]], "question": r["question"],
                "chosen": r["chosen"], "rejected": r["rejected"], "meta": {},
            }) + "\n")
    return [path]


def make_mirror(root: Path, n: int, shared: float = 0.0) -> list[Path]:
    rng = random.Random(0)
    (root / "persona_all").mkdir(parents=True)
    for u, profile in enumerate(personas(rng)):
        (root / "persona_all" / f"user{u}.json").write_text(json.dumps(profile), encoding="utf-8")
    files = {(s, t): (root / f"{s}_{t}.jsonl").open("w", encoding="utf-8")
             for s in ("general", "specific") for t in ("easy", "mid", "hard")}
    keys = list(files)
    for r in rows(n, rng, shared):
        files[keys[r["i"] % len(keys)]].write(json.dumps({"user_id": f"user{r['user']}", "question": r["question"],
                                                          "chosen": r["chosen"], "reject": r["rejected"]}) + "\n")
    for handle in files.values():
        handle.close()
    return sorted(root.glob("*.jsonl"))


def bare_loop(sources: list[Path], dst: Path) -> int:
    """The floor for any runner: parse each row, compare lengths, write the same two prediction lines
    (same keys and values as tailorbench's) with json.dumps. No validation, statistics or metrics."""
    cases = 0
    with dst.open("w", encoding="utf-8") as out:
        for src in sources:
            split, _, tier = src.stem.partition("_")
            tier = {"mid": "medium"}.get(tier, tier)
            with src.open(encoding="utf-8") as fin:
                for number, line in enumerate(fin, start=1):
                    row = json.loads(line)
                    rejected = row.get("rejected", row.get("reject"))
                    lc, lr = len(row["chosen"]), len(rejected)
                    cases += 1
                    for order in ("AB", "BA"):
                        la, lb = (lc, lr) if order == "AB" else (lr, lc)
                        choice = None if la == lb else ("A" if la > lb else "B")
                        out.write(json.dumps({
                            "case_id": row.get("id", f"{split}/{tier}/{src.stem}:{number}"), "judge": "longer",
                            "setting": "persona", "order": order, "choice": choice,
                            "correct": choice == ("A" if order == "AB" else "B"),
                            "status": "ok" if choice else "abstain", "split": row.get("split", split),
                            "tier": row.get("tier", tier), "user_id": row["user_id"], "len_chosen": lc,
                            "len_rejected": lr, "scores": None, "raw": None, "error": None, "latency_s": None,
                            "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None, "truncated": False,
                            "cached": False}, ensure_ascii=False) + "\n")
    return cases


def same_lines(a: Path, b: Path) -> bool:
    """The bare loop and the runner wrote the same predictions (as sets of parsed lines)."""
    parse = lambda p: sorted(json.dumps(json.loads(x), sort_keys=True) for x in p.open())  # noqa: E731
    return parse(a) == parse(b)


def measure(layout: str, n: int, repeat: int, shared: float = 0.0) -> dict[str, Any]:
    """Best of `repeat` alternating runs of each side (the machine is shared: the minimum is the least noisy
    estimate of what the code costs)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        root.mkdir()
        sources = make_mirror(root, n, shared) if layout == "mirror" else make_native(root, n, shared)
        data = str(root if layout == "mirror" else sources[0])
        bare_times, runner_times, without_times = [], [], []
        for k in range(repeat):
            start = time.perf_counter()
            cases = bare_loop(sources, Path(tmp) / "bare.jsonl")
            bare_times.append(time.perf_counter() - start)
            out = Path(tmp) / f"run{k}"
            start = time.perf_counter()
            run_eval(EvalConfig(data=data, judge="longer", n_boot=1000), out, progress=False)
            runner_times.append(time.perf_counter() - start)
            with without_reliability():
                start = time.perf_counter()
                run_eval(EvalConfig(data=data, judge="longer", n_boot=1000), Path(tmp) / f"without{k}",
                         progress=False)
                without_times.append(time.perf_counter() - start)
        verdicts = sum(1 for _ in (out / "predictions.jsonl").open())
        predictions = read_predictions(out)
        reliability_times = []
        for _ in range(repeat):
            cols = columns(predictions)  # read by the metrics in the runner: shared, not the table's cost
            start = time.perf_counter()
            reliability(predictions, None, n_boot=1000, cols=cols)
            reliability_times.append(time.perf_counter() - start)
        identical = same_lines(Path(tmp) / "bare.jsonl", out / "predictions.jsonl")
    bare, full, without = min(bare_times), min(runner_times), min(without_times)
    return {
        "bench": "eval_overhead", "layout": layout, "shared_rows": shared, "cases": cases, "verdicts": verdicts,
        "same_prediction_lines": identical, "repeat": repeat,
        "bare_loop_s": round(bare, 3), "bare_cases_per_s": round(cases / bare),
        "runner_s": round(full, 3), "runner_cases_per_s": round(cases / full),
        "ratio_to_bare": round(bare / full, 3), "goal": 0.5,
        "reliability_s": round(min(reliability_times), 3),
        "reliability_share": round(min(reliability_times) / (full - min(reliability_times)), 4),
        "runner_without_reliability_s": round(without, 3),
        "with_over_without": round(full / without, 4),
    }


@contextlib.contextmanager
def without_reliability() -> Iterator[None]:
    """The runner with the reliability table left out (an empty block), for the with/without comparison."""
    original = reliability_module.reliability
    reliability_module.reliability = lambda *args, **kwargs: {"probability": None, "cells": {}}
    try:
        yield
    finally:
        reliability_module.reliability = original


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shared", type=float, default=0.0,
                        help="share of rows that repeat an earlier pair in another file (PersonaFeedback dev: 0.3)")
    args = parser.parse_args()
    for layout in ("mirror", "native"):
        print(json.dumps(measure(layout, args.cases, args.repeat, args.shared)), flush=True)


if __name__ == "__main__":
    main()
